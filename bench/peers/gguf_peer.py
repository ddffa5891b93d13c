"""gguf-py's GGUFReader: parses the file and exposes each tensor as a view of a numpy memmap,
so every page is touched after the call.
  gguf_peer.py FILE"""
import sys

from gguf import GGUFReader

from common import clock, report, touch_numpy

t = clock()
reader = GGUFReader(sys.argv[1])
report(t, touch_numpy(tensor.data for tensor in reader.tensors))
