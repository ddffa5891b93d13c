#!/usr/bin/python3
"""Writes the benchmark's inputs into a cache folder, skipping those already there.

llama.*: a ~1 GiB llama-shaped checkpoint (32 layers, hidden 1024, 387 tensors; linear weights
and lm_head bf16, embeddings, norms and biases f32) as safetensors, a torch .bin (torch.save),
a folder of .npy files (bf16 stored as uint16: numpy has no bf16) and GGUF (our own writer).
single_1g / single_100m: one f32 tensor of 1 GiB / 100 MiB (10x bytes).
split_320 / split_3200: the same 1000 MiB as 320 or 3200 f32 tensors (10x tensors).
Contents are a repeated random block: the benchmark measures reading, not the values.
Needs Debian's numpy and torch (/usr/bin/python3)."""
import json
import os
import struct
import sys

import numpy as np

BLOCK = np.random.default_rng(7).integers(0, 2**32, size=(4 << 20) // 4, dtype=np.uint32)
BLOCK = (BLOCK & 0x3FFFFFFF | 0x3C000000).view(np.float32)  # finite floats; bf16 halves too


def array(shape, dtype):
    """An array of `shape`: f32 or bf16 (as uint16) filled from BLOCK."""
    n = int(np.prod(shape))
    reps = (n + BLOCK.size - 1) // BLOCK.size
    flat = np.tile(BLOCK, reps)[:n]
    if dtype == "BF16":
        flat = (flat.view(np.uint32) >> 16).astype(np.uint16)
    return flat.reshape(shape)


def llama_tensors():
    hidden, inter, layers, vocab = 1024, 2560, 32, 32000
    out = [("model.embed_tokens.weight", "F32", (vocab, hidden))]
    for i in range(layers):
        p = f"model.layers.{i}."
        for name in ("q", "k", "v", "o"):
            out.append((p + f"self_attn.{name}_proj.weight", "BF16", (hidden, hidden)))
        for name in ("q", "k", "v"):
            out.append((p + f"self_attn.{name}_proj.bias", "F32", (hidden,)))
        out.append((p + "mlp.gate_proj.weight", "BF16", (inter, hidden)))
        out.append((p + "mlp.up_proj.weight", "BF16", (inter, hidden)))
        out.append((p + "mlp.down_proj.weight", "BF16", (hidden, inter)))
        out.append((p + "input_layernorm.weight", "F32", (hidden,)))
        out.append((p + "post_attention_layernorm.weight", "F32", (hidden,)))
    out.append(("model.norm.weight", "F32", (hidden,)))
    out.append(("lm_head.weight", "BF16", (vocab, hidden)))
    return out


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for name, dtype, shape in tensors:
        n = int(np.prod(shape)) * (2 if dtype == "BF16" else 4)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name, dtype, shape in tensors:
            f.write(array(shape, dtype).tobytes())
    os.rename(path + ".tmp", path)


def write_torch(path, tensors):
    import torch

    state = {}
    for name, dtype, shape in tensors:
        a = array(shape, dtype)
        if dtype == "BF16":  # torch cannot take uint16 arrays; int16 has the same bits
            state[name] = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
        else:
            state[name] = torch.from_numpy(a)
    torch.save(state, path + ".tmp")
    os.rename(path + ".tmp", path)


def write_npy(folder, tensors):
    os.makedirs(folder + ".tmp", exist_ok=True)
    for name, dtype, shape in tensors:
        np.save(os.path.join(folder + ".tmp", name + ".npy"), array(shape, dtype))
    os.rename(folder + ".tmp", folder)


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write_gguf(path, tensors):
    align = 32
    kv = gguf_string("general.architecture") + struct.pack("<I", 8) + gguf_string("llama")
    infos, offset = b"", 0
    for name, dtype, shape in tensors:
        dims = list(reversed(shape))  # ggml lists the fastest-moving dimension first
        infos += gguf_string(name) + struct.pack("<I", len(dims))
        infos += b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", 30 if dtype == "BF16" else 0, offset)
        offset += int(np.prod(shape)) * (2 if dtype == "BF16" else 4)
        offset += -offset % align
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 1) + kv + infos
    head += b"\0" * (-len(head) % align)
    with open(path + ".tmp", "wb") as f:
        f.write(head)
        for name, dtype, shape in tensors:
            data = array(shape, dtype).tobytes()
            f.write(data + b"\0" * (-len(data) % align))
    os.rename(path + ".tmp", path)


def main(cache):
    os.makedirs(cache, exist_ok=True)
    llama = llama_tensors()
    jobs = [
        ("llama.safetensors", write_safetensors, llama),
        ("llama.bin", write_torch, llama),
        ("llama_npy", write_npy, llama),
        ("llama.gguf", write_gguf, llama),
        ("single_1g.safetensors", write_safetensors, [("w", "F32", (262144, 1024))]),
        ("single_100m.safetensors", write_safetensors, [("w", "F32", (25600, 1024))]),
        ("split_320.safetensors", write_safetensors,
         [(f"t{i}", "F32", (800, 1024)) for i in range(320)]),
        ("split_3200.safetensors", write_safetensors,
         [(f"t{i}", "F32", (80, 1024)) for i in range(3200)]),
    ]
    for name, writer, tensors in jobs:
        path = os.path.join(cache, name)
        if os.path.exists(path):
            continue
        print(f"bench: writing {path}", file=sys.stderr)
        writer(path, tensors)


if __name__ == "__main__":
    main(sys.argv[1])
