"""tensorizer: TensorDeserializer of its own format (serialized once from the same weights by
bench/peers/make_inputs.py) to CPU, every tensor read into memory (lazy_load=False, its default
readers).
  tensorizer_peer.py FILE.tensors"""
import sys

from tensorizer import TensorDeserializer

from common import clock, owned_bytes_torch, report

t = clock()
with TensorDeserializer(sys.argv[1], device="cpu") as tensors:
    nbytes = owned_bytes_torch(tensors.values())
report(t, nbytes)
