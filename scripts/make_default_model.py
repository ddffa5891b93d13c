#!/usr/bin/python3
"""Writes models/tiny-llama: a small llama-shaped checkpoint (bf16 weights, f32 norms) as
safetensors plus its config.json. Reproducible: a fixed seed, sorted names, and a plain
writer of the safetensors layout (8-byte header length, JSON header padded with spaces to a
multiple of 8, data in header order). Run with Debian's /usr/bin/python3 (needs numpy)."""
import json
import pathlib
import sys

import numpy as np

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 1024,
          "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
          "torch_dtype": "bfloat16"}


def to_bf16(a):
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def tensors(rng):
    c = CONFIG
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    kv = h // c["num_attention_heads"] * c["num_key_value_heads"]
    out = {"model.embed_tokens.weight": ("BF16", (v, h)), "lm_head.weight": ("BF16", (v, h)),
           "model.norm.weight": ("F32", (h,))}
    for n in range(c["num_hidden_layers"]):
        p = f"model.layers.{n}."
        out.update({p + "self_attn.q_proj.weight": ("BF16", (h, h)),
                    p + "self_attn.k_proj.weight": ("BF16", (kv, h)),
                    p + "self_attn.v_proj.weight": ("BF16", (kv, h)),
                    p + "self_attn.o_proj.weight": ("BF16", (h, h)),
                    p + "mlp.gate_proj.weight": ("BF16", (i, h)),
                    p + "mlp.up_proj.weight": ("BF16", (i, h)),
                    p + "mlp.down_proj.weight": ("BF16", (h, i)),
                    p + "input_layernorm.weight": ("F32", (h,)),
                    p + "post_attention_layernorm.weight": ("F32", (h,))})
    for name in sorted(out):
        dtype, shape = out[name]
        if dtype == "F32":
            yield name, dtype, shape, np.ones(shape, np.float32).tobytes()
        else:
            yield name, dtype, shape, to_bf16(rng.standard_normal(shape) * 0.02).tobytes()


def main(folder):
    folder.mkdir(parents=True, exist_ok=True)
    header, blobs, offset = {}, [], 0
    for name, dtype, shape, data in tensors(np.random.default_rng(0)):
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt", "generator": "scripts/make_default_model.py"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(folder / "model.safetensors", "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + b"".join(blobs))
    (folder / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent / "models/tiny-llama"))
