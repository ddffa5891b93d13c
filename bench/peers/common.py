"""What every peer driver shares: the JSON line it prints ({"seconds", "bytes"}, the seconds
of the load call alone) and touching every page of lazily-mapped results, so that a peer that
returns views of a mapped file is timed reading its bytes, as `ballast load --mode mmap` is."""
import json
import time

PAGE = 4096


def clock():
    return time.perf_counter()


def report(start, nbytes):
    print(json.dumps({"seconds": time.perf_counter() - start, "bytes": int(nbytes)}), flush=True)


def touch_torch(tensors):
    """Reads one byte of every 4 KiB page of each tensor; returns the tensors' bytes."""
    import torch

    total = 0
    for t in tensors:
        flat = t.reshape(-1).view(torch.uint8) if t.dtype != torch.uint8 else t.reshape(-1)
        flat[::PAGE].sum()
        total += flat.numel()
    return total


def touch_numpy(arrays):
    """Reads one byte of every 4 KiB page of each array; returns the arrays' bytes."""
    total = 0
    for a in arrays:
        flat = a.reshape(-1).view("u1")
        flat[::PAGE].sum()
        total += flat.size
    return total


def owned_bytes_torch(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)
