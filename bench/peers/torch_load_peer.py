"""torch.load(weights_only=True) of the .bin, into memory (mmap=False) or as views of a mapped
file (mmap=True, every page then touched).
  torch_load_peer.py FILE [--mmap]"""
import sys

import torch

from common import clock, owned_bytes_torch, report, touch_torch

mmap = "--mmap" in sys.argv[2:]
t = clock()
state = torch.load(sys.argv[1], map_location="cpu", weights_only=True, mmap=mmap)
report(t, touch_torch(state.values()) if mmap else owned_bytes_torch(state.values()))
