"""Dtypes given as ballast names ("bf16"), aliases ("bfloat16"), torch.dtype or numpy.dtype,
turned into ballast's canonical name."""
from __future__ import annotations

from typing import Any

from . import _core
from ._errors import InvalidArgumentError

# Names torch and numpy use that ballast's own aliases do not cover.
_FRAMEWORK_NAMES = {
    "bool": "bool",
    "bool_": "bool",
    "complex64": "c64",
    "complex128": "c128",
    "cfloat": "c64",
    "cdouble": "c128",
    "float8_e4m3fn": "f8_e4m3",
    "float8_e5m2": "f8_e5m2",
    "float8_e4m3fnuz": "f8_e4m3fnuz",
    "float8_e5m2fnuz": "f8_e5m2fnuz",
    "float8_e8m0fnu": "f8_e8m0",
    "short": "i16",
    "long": "i64",
    "int": "i32",
}


def _from_numpy(dtype: Any) -> bool:
    module = dtype.__module__ if isinstance(dtype, type) else type(dtype).__module__
    return module.split(".")[0] == "numpy"


def dtype_name(dtype: Any) -> str:
    """ballast's canonical name of `dtype`: a str ("f32", "bfloat16"), a torch.dtype or a
    numpy.dtype (or numpy scalar type). Raises InvalidArgumentError for anything else."""
    if isinstance(dtype, str):
        text = dtype
    elif type(dtype).__module__ == "torch" and type(dtype).__name__ == "dtype":
        text = str(dtype).removeprefix("torch.")
    elif _from_numpy(dtype):
        import numpy

        text = numpy.dtype(dtype).name
    else:
        raise InvalidArgumentError(f"invalid_argument: not a dtype: {dtype!r}",
                                   message=f"not a dtype: {dtype!r}")
    name = _core.canonical_dtype(_FRAMEWORK_NAMES.get(text, text))
    if name is None:
        message = f"unknown dtype '{text}'; valid: {', '.join(_core.dtype_names())}"
        raise InvalidArgumentError(f"invalid_argument: {message}", message=message)
    return name
