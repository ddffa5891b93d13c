"""fastsafetensors' CPU path: fastsafe_open(device="cpu", nogds=True) reads the file by pread
through its bounce buffer into host memory, then get_tensor of every name (zero-copy views of
that buffer, which they keep alive).
  fastsafetensors_peer.py FILE"""
import sys

from fastsafetensors import fastsafe_open

from common import clock, owned_bytes_torch, report

t = clock()
with fastsafe_open(sys.argv[1], framework="pt", device="cpu", nogds=True) as f:
    tensors = [f.get_tensor(k) for k in f.keys()]
report(t, owned_bytes_torch(tensors))
