"""ballast.Tensor into numpy arrays and torch tensors, without copying.

numpy has no bf16 or fp8 dtypes: those fail with UnsupportedError naming the way out rather
than being reinterpreted. torch takes fp8 (where it has the type) as a byte view.
"""
from __future__ import annotations

from typing import Any, Optional

from ._errors import UnsupportedError

_NO_NUMPY = {"bf16", "f8_e4m3", "f8_e5m2", "f8_e4m3fnuz", "f8_e5m2fnuz", "f8_e8m0"}
_TORCH_FP8 = {"f8_e4m3": "float8_e4m3fn", "f8_e5m2": "float8_e5m2",
              "f8_e4m3fnuz": "float8_e4m3fnuz", "f8_e5m2fnuz": "float8_e5m2fnuz",
              "f8_e8m0": "float8_e8m0fnu"}
# Taken as a byte view: torch before 2.3 lacks the unsigned types, and before 2.x reads no
# DLPack bool.
_TORCH_BYTE_VIEWS = {"u16": "uint16", "u32": "uint32", "u64": "uint64", "bool": "bool"}

FRAMEWORKS = ("pt", "torch", "np", "numpy")


def _unsupported(tensor: Any, what: str, way_out: str) -> UnsupportedError:
    text = f"{tensor.dtype} {what}: {way_out}"
    return UnsupportedError(f"unsupported: {text} (tensor: {tensor.name})", message=text,
                            tensor=tensor.name)


def to_numpy(tensor: Any) -> Any:
    """A numpy array viewing `tensor` (read-only when the tensor is)."""
    import numpy

    if tensor.dtype in _NO_NUMPY:
        raise _unsupported(tensor, "has no numpy dtype",
                           "load it into torch (framework='pt'), or add a cast step such as "
                           "ballast.Cast('f32')")
    array = numpy.from_dlpack(tensor)
    if tensor.readonly and array.flags.writeable:  # a legacy capsule cannot say read-only
        array.flags.writeable = False
    return array


def to_torch(tensor: Any) -> Any:
    """A torch tensor viewing `tensor`."""
    import torch

    name = _TORCH_FP8.get(tensor.dtype) or _TORCH_BYTE_VIEWS.get(tensor.dtype)
    if name is None:
        return torch.utils.dlpack.from_dlpack(tensor.__dlpack__())
    torch_dtype = getattr(torch, name, None)
    if torch_dtype is None:
        raise _unsupported(tensor, f"has no torch dtype in torch {torch.__version__}",
                           "add a cast step such as ballast.Cast('f32')")
    return torch.utils.dlpack.from_dlpack(tensor.raw().__dlpack__()).view(torch_dtype).reshape(
        tensor.shape)


def convert(tensor: Any, framework: Optional[str]) -> Any:
    """`tensor` as `framework` has it: None keeps the ballast.Tensor; a quantized bundle
    becomes a dict of its converted parts."""
    if framework is None:
        return tensor
    if framework not in FRAMEWORKS:
        raise ValueError(f"framework is one of {', '.join(FRAMEWORKS)} or None, not {framework!r}")
    if tensor.parts:
        return {name: convert(part, framework) for name, part in tensor.parts.items()}
    return to_torch(tensor) if framework in ("pt", "torch") else to_numpy(tensor)
