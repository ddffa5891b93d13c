#!/usr/bin/env python3
"""Writes the GPU benchmark's checkpoint: ~4 GiB of llama-shaped bf16 weights (and small f32
norms) as one safetensors file, values from a repeated random block (finite, so casts are
meaningful). Needs numpy only.  make_checkpoint.py PATH [GiB]"""
import json
import struct
import sys

import numpy as np


def main():
    path, gib = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
    block = np.random.default_rng(7).integers(0, 2**16, size=1 << 20, dtype=np.uint16)
    block = block & 0x3FFF | 0x3C00  # finite bf16 values of moderate size
    hidden, inter = 4096, 11008
    tensors = []  # (name, dtype, shape, nbytes)
    total, layer = 0, 0
    while total < gib * 2**30:
        for name, shape in ((f"layers.{layer}.attn.qkv", (3 * hidden, hidden)),
                            (f"layers.{layer}.attn.o", (hidden, hidden)),
                            (f"layers.{layer}.mlp.up", (inter, hidden)),
                            (f"layers.{layer}.mlp.down", (hidden, inter))):
            tensors.append((name, "BF16", shape, shape[0] * shape[1] * 2))
            total += tensors[-1][3]
        tensors.append((f"layers.{layer}.norm", "F32", (hidden,), hidden * 4))
        total += hidden * 4
        layer += 1
    header, offset = {}, 0
    for name, dtype, shape, nbytes in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _, _, _, nbytes in tensors:
            reps = nbytes // 2 // block.size + 1
            f.write(np.tile(block, reps)[: nbytes // 2].tobytes())
    print(f"{path}: {len(tensors)} tensors, {offset / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
