#!/usr/bin/env python3
"""GB/s into CUDA device memory for the loaders ballast is compared with, on the same
page-cached file and machine as bench/gpu/gpu_load_bench: safetensors load_file(device=cuda),
torch.load(map_location=cuda) of the same tensors, InstantTensor and fastsafetensors (when
installed), torch's pinned-memory copy (the bound, again) and ballast's Python API when
importable. Each figure is the best of `runs` loads, timed to the last tensor on the device.
Prints one JSON object.   gpu_peers.py FILE.safetensors [runs]"""
import json
import os
import sys
import time

import torch


def timed(load, runs):
    best, nbytes = float("inf"), 0
    for _ in range(runs):
        torch.cuda.synchronize()
        start = time.perf_counter()
        tensors = load()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
        nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
        assert all(t.is_cuda for t in tensors.values())
        del tensors
        torch.cuda.empty_cache()
    return {"seconds": best, "gbps": nbytes / best / 1e9, "tensor_bytes": nbytes}


def bound(path, runs):
    size = os.path.getsize(path)
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    with open(path, "rb") as f:
        f.readinto(memoryview(host.numpy()))
    device = torch.empty(size, dtype=torch.uint8, device="cuda")
    best = float("inf")
    for _ in range(runs):
        torch.cuda.synchronize()
        start = time.perf_counter()
        device.copy_(host)
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return {"seconds": best, "gbps": size / best / 1e9}


def safetensors_load(path):
    from safetensors.torch import load_file
    return lambda: load_file(path, device="cuda:0")


def torch_load(path):
    from safetensors.torch import load_file
    pt = path + ".pt"
    if not os.path.exists(pt):
        torch.save(load_file(path), pt)
    with open(pt, "rb") as f:  # page-cache it as the safetensors file is
        while f.read(1 << 26):
            pass
    return lambda: torch.load(pt, map_location="cuda:0", weights_only=True, mmap=True)


def instanttensor_load(path):
    from instanttensor import safe_open

    def load():
        with safe_open(path, framework="pt", device=0) as f:
            return {name: t.clone() for name, t in f.tensors()}
    return load


def fastsafetensors_load(path):
    from fastsafetensors import fastsafe_open

    def load():
        with fastsafe_open(path, framework="pt", device="cuda:0", nogds=True) as f:
            return {name: f.get_tensor(name).clone() for name in f.keys()}
    return load


def ballast_load(path):
    import ballast.safetensors.torch as ours
    return lambda: ours.load_file(path, device="cuda:0")


def main():
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    out = {"device": torch.cuda.get_device_name(0), "file_bytes": os.path.getsize(path),
           "bound_torch_pinned_copy": bound(path, runs)}
    for name, make in (("safetensors", safetensors_load), ("torch_load", torch_load),
                       ("instanttensor", instanttensor_load),
                       ("fastsafetensors", fastsafetensors_load), ("ballast_python", ballast_load)):
        try:
            out[name] = timed(make(path), runs)
            out[name]["ratio_to_bound"] = out[name]["gbps"] / out["bound_torch_pinned_copy"]["gbps"]
        except Exception as e:  # a peer missing or failing is reported, not fatal
            out[name] = {"error": f"{type(e).__name__}: {e}"}
        print(name, json.dumps(out[name]), file=sys.stderr, flush=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
