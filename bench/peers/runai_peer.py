"""The Run:ai model streamer (runai-model-streamer) to CPU: SafetensorsStreamer.stream_file of a
local file or an s3:// object (its own S3 client; the endpoint and credentials come from the
environment), every tensor yielded owned (owned=True, the default: each stays valid after the
stream), its default concurrency and memory limit.
  runai_peer.py FILE|s3://BUCKET/KEY"""
import sys

from runai_model_streamer import SafetensorsStreamer

from common import clock, owned_bytes_torch, report

t = clock()
with SafetensorsStreamer() as streamer:
    streamer.stream_file(sys.argv[1])
    tensors = [tensor for _, tensor in streamer.get_tensors()]
report(t, owned_bytes_torch(tensors))
