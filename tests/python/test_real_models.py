"""Real checkpoints that nobody here wrote, shipped inside PyPI packages (requirements/models.txt):
the Silero VAD (silero-vad: safetensors and six ONNX exports) and the LPIPS linear layers (lpips:
torch.save files in the legacy, pre-zip format). Every tensor that ballast reads must equal, in
name, dtype, shape and bytes, what the format's own reference reader returns: the safetensors
package, onnx's numpy_helper and torch.load (Debian's torch 1.13 and onnx 1.12).
"""
import hashlib
import importlib.util
import json
import pathlib

import pytest
from conftest import require, run_cli, run_debian_python

NUMPY_DTYPES = {
    "float64": "f64", "float32": "f32", "float16": "f16", "int64": "i64", "int32": "i32",
    "int16": "i16", "int8": "i8", "uint64": "u64", "uint32": "u32", "uint16": "u16",
    "uint8": "u8", "bool": "bool", "complex64": "c64", "complex128": "c128",
}

# Reference readers run with Debian's interpreter; each prints {name: [dtype, shape, sha256]}
# with the sha256 of the tensor's C-order little-endian bytes.
ONNX_REFERENCE = r"""
import hashlib, json, sys
import numpy, onnx
from onnx import numpy_helper

def entry(proto):
    array = numpy.array(numpy_helper.to_array(proto), order="C")  # keeps 0-d arrays 0-d
    array = array.astype(array.dtype.newbyteorder("<"), copy=False)
    return [str(array.dtype), list(array.shape), hashlib.sha256(array.tobytes()).hexdigest()]

def walk(graph, out):
    for init in graph.initializer:
        out[init.name] = entry(init)
    for node in graph.node:
        for attr in node.attribute:
            if node.op_type == "Constant" and attr.name == "value":
                out[node.output[0]] = entry(attr.t)
            if attr.type == onnx.AttributeProto.GRAPH:
                walk(attr.g, out)
            for sub in attr.graphs:
                walk(sub, out)

out = {}
walk(onnx.load(sys.argv[1]).graph, out)
print(json.dumps(out))
"""

TORCH_REFERENCE = r"""
import hashlib, json, sys
import torch

state = torch.load(sys.argv[1], map_location="cpu")
out = {}
for name, tensor in state.items():
    array = tensor.contiguous().numpy()
    out[name] = [str(array.dtype), list(array.shape), hashlib.sha256(array.tobytes()).hexdigest()]
print(json.dumps(out))
"""


def package_dir(name):
    spec = importlib.util.find_spec(name)
    require(spec is not None, f"the PyPI package {name}",
            "scripts/setup.sh installs requirements/models.txt")
    return pathlib.Path(spec.submodule_search_locations[0])


def silero_file(name):
    return package_dir("silero_vad") / "data" / name


def lpips_files():
    return sorted((package_dir("lpips") / "weights").glob("*/*.pth"))


def ballast_tensors(cli, path):
    out = json.loads(run_cli(cli, "hash", "--json", path).stdout)["tensors"]
    return {name: [t["dtype"], t["shape"], t["sha256"]] for name, t in out.items()}


def reference_in_ballast_terms(reference):
    return {name: [NUMPY_DTYPES[dtype], shape, digest]
            for name, (dtype, shape, digest) in reference.items()}


def test_silero_safetensors_equals_the_safetensors_package(ballast_cli):
    from safetensors.numpy import load_file

    path = silero_file("silero_vad_16k.safetensors")
    reference = {}
    for name, array in load_file(str(path)).items():
        reference[name] = [str(array.dtype), list(array.shape),
                           hashlib.sha256(array.tobytes()).hexdigest()]
    assert len(reference) > 10
    assert ballast_tensors(ballast_cli, path) == reference_in_ballast_terms(reference)


@pytest.mark.parametrize("name", [
    "silero_vad.onnx", "silero_vad_16k_op15.onnx", "silero_vad_16k_sequence.onnx",
    "silero_vad_half.onnx", "silero_vad_op18_ifless.onnx", "silero_vad_openvino_16k.onnx",
])
def test_silero_onnx_equals_onnx_numpy_helper(ballast_cli, name):
    path = silero_file(name)
    reference = json.loads(run_debian_python(ONNX_REFERENCE, path))
    assert reference, f"{name} has no weights"
    assert ballast_tensors(ballast_cli, path) == reference_in_ballast_terms(reference)


def test_lpips_legacy_torch_files_equal_torch_load(ballast_cli):
    files = lpips_files()
    assert len(files) == 6
    for path in files:
        reference = json.loads(run_debian_python(TORCH_REFERENCE, path))
        assert ballast_tensors(ballast_cli, path) == reference_in_ballast_terms(reference), path
