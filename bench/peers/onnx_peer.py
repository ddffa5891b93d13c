"""onnx.load of a model whose initializers are external data: reads every tensor's bytes into
its TensorProto (raw_data), in memory.
  onnx_peer.py MODEL.onnx"""
import sys

import onnx

from common import clock, report

t = clock()
model = onnx.load(sys.argv[1], load_external_data=True)
report(t, sum(len(init.raw_data) for init in model.graph.initializer))
