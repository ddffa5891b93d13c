"""Writes the inputs only some peers read, from the same tensors as llama.safetensors (same
names, dtypes, shapes and bytes), once, into the benchmark's cache folder:
llama.tensors (tensorizer's own format), llama_onnx/model.onnx with every initializer as
external data in llama_onnx/model.onnx.data, and llama_4layers.safetensors (the tensors of
layers 0-3, 92 MiB: the S3 rows' object, since moto reads a whole object for every ranged GET).
Run with the benchmark's environment.
  make_inputs.py CACHE_FOLDER"""
import os
import shutil
import sys

import onnx
import torch
from safetensors.torch import load_file

ONNX_TYPES = {torch.float32: onnx.TensorProto.FLOAT, torch.bfloat16: onnx.TensorProto.BFLOAT16}


def write_tensorizer(state, path):
    from tensorizer import TensorSerializer

    serializer = TensorSerializer(path + ".tmp")
    serializer.write_state_dict(state)
    serializer.close()
    os.rename(path + ".tmp", path)


def write_onnx(state, folder):
    inits = []
    for name, t in state.items():
        init = onnx.TensorProto(name=name, data_type=ONNX_TYPES[t.dtype], dims=list(t.shape))
        init.raw_data = t.contiguous().view(torch.uint8).numpy().tobytes()
        inits.append(init)
    graph = onnx.helper.make_graph([], "llama", [], [], initializer=inits)
    model = onnx.helper.make_model(graph, producer_name="ballast-bench")
    tmp = folder + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    onnx.save_model(model, os.path.join(tmp, "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=0)
    os.rename(tmp, folder)


def write_4layers(state, path):
    from safetensors.torch import save_file

    keep = {k: v for k, v in state.items()
            if k.startswith(tuple(f"model.layers.{i}." for i in range(4)))}
    save_file(keep, path + ".tmp")
    os.rename(path + ".tmp", path)


def main(cache):
    state = None
    for name, writer in (("llama.tensors", write_tensorizer), ("llama_onnx", write_onnx),
                         ("llama_4layers.safetensors", write_4layers)):
        path = os.path.join(cache, name)
        if os.path.exists(path):
            continue
        print(f"bench: writing {path}", file=sys.stderr)
        state = state if state is not None else load_file(os.path.join(cache, "llama.safetensors"))
        writer(state, path)


if __name__ == "__main__":
    main(sys.argv[1])
