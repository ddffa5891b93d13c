"""The safetensors file layout as the `safetensors` package writes it, so that files saved
through ballast.safetensors are byte-identical to its own: an 8-byte little-endian header
length, a compact JSON header (``__metadata__`` first, its keys sorted: the package orders them
by a per-process hash; then the tensors in file order) padded
with spaces to a multiple of 8, then the tensors' bytes, larger dtypes first, then by name.
"""
from __future__ import annotations

import ctypes
import json
import os
import struct
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union


class SafetensorError(Exception):
    """Custom Python Exception for Safetensor errors."""


# Constructor names (torch's and numpy's) -> format codes, as the package accepts them.
_CODES = {
    "bool": "BOOL", "int8": "I8", "uint8": "U8", "int16": "I16", "uint16": "U16",
    "int32": "I32", "uint32": "U32", "int64": "I64", "uint64": "U64", "float16": "F16",
    "float32": "F32", "float64": "F64", "bfloat16": "BF16", "float8_e4m3fn": "F8_E4M3",
    "float8_e4m3fnuz": "F8_E4M3FNUZ", "float8_e5m2": "F8_E5M2",
    "float8_e5m2fnuz": "F8_E5M2FNUZ", "float8_e8m0fnu": "F8_E8M0",
    "float4_e2m1fn_x2": "F4", "complex64": "C64",
}
# The order of tensors in a file: earlier codes first (the package's dtype order, largest
# first); ties by name.
_FILE_ORDER = ["U64", "I64", "F64", "C64", "F32", "U32", "I32", "BF16", "F16", "U16", "I16",
               "F8_E5M2FNUZ", "F8_E4M3FNUZ", "F8_E8M0", "F8_E4M3", "F8_E5M2", "I8", "U8", "F4",
               "BOOL"]
# Format codes -> ballast's dtype names.
BALLAST_NAMES = {"BOOL": "bool", "U8": "u8", "I8": "i8", "U16": "u16", "I16": "i16",
                 "F16": "f16", "BF16": "bf16", "U32": "u32", "I32": "i32", "F32": "f32",
                 "U64": "u64", "I64": "i64", "F64": "f64", "C64": "c64", "F4": "f4_e2m1",
                 "F8_E4M3": "f8_e4m3", "F8_E5M2": "f8_e5m2", "F8_E4M3FNUZ": "f8_e4m3fnuz",
                 "F8_E5M2FNUZ": "f8_e5m2fnuz", "F8_E8M0": "f8_e8m0"}
# Format codes -> the torch / numpy attribute names of their dtypes.
FRAMEWORK_NAMES = {code: name for name, code in _CODES.items()}
# Bits per element of each code.
BITS = {"BOOL": 8, "U8": 8, "I8": 8, "U16": 16, "I16": 16, "F16": 16, "BF16": 16, "U32": 32,
        "I32": 32, "F32": 32, "U64": 64, "I64": 64, "F64": 64, "C64": 64, "F4": 4,
        "F8_E4M3": 8, "F8_E5M2": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "F8_E8M0": 8}


class TensorSpec:
    """Describes a single tensor passed to `serialize` / `serialize_file`.

    ``TensorSpec(dtype=, shape=, data_ptr=, data_len=)``: `dtype` is a constructor-style name
    ("float32", "bfloat16", ...), checked at once; `shape` the element counts (for the packed
    "float4_e2m1fn_x2" the storage shape: its last dimension is doubled); `data_ptr` the
    address of `data_len` contiguous bytes that must stay alive while they are serialized.
    """

    __slots__ = ("_dtype", "_shape", "_data_ptr", "_data_len")

    def __init__(self, *, dtype: str, shape: Sequence[int], data_ptr: int,
                 data_len: int) -> None:
        if dtype not in _CODES:
            raise SafetensorError(f'Unknown dtype "{dtype}". Supported dtypes: '
                                  + ", ".join(_CODES))
        self._dtype = _CODES[dtype]
        self._shape = [int(d) for d in shape]
        if self._dtype == "F4" and self._shape:
            self._shape[-1] *= 2
        self._data_ptr = int(data_ptr)
        self._data_len = int(data_len)

    @property
    def dtype(self) -> str:
        """The format code written into the header ("F32", "BF16", ...)."""
        return self._dtype

    @property
    def shape(self) -> List[int]:
        """The logical shape recorded in the header."""
        return list(self._shape)

    @property
    def data_ptr(self) -> int:
        """The address of the tensor's contiguous bytes."""
        return self._data_ptr

    @property
    def data_len(self) -> int:
        """The length of the tensor's bytes."""
        return self._data_len

    def __repr__(self) -> str:
        return (f"TensorSpec(dtype='{self._dtype}', shape={self._shape}, "
                f"data_ptr={self._data_ptr}, data_len={self._data_len})")


def _check_arguments(tensor_dict: Any, metadata: Any) -> None:
    if not isinstance(tensor_dict, dict):
        raise TypeError(f"argument 'tensor_dict': '{type(tensor_dict).__name__}' object cannot "
                        "be converted to 'PyDict'")
    for value in tensor_dict.values():
        if not isinstance(value, TensorSpec):
            raise TypeError(f"argument 'tensor_dict': '{type(value).__name__}' object is not "
                            "an instance of 'TensorSpec'")
    if metadata is not None:
        for key, value in metadata.items():
            for item in (key, value):
                if not isinstance(item, str):
                    raise TypeError(f"argument 'metadata': '{type(item).__name__}' object is "
                                    "not an instance of 'str'")


def _layout(tensor_dict: Dict[str, TensorSpec],
            metadata: Optional[Mapping[str, str]]) -> Tuple[bytes, List[TensorSpec]]:
    """The header (length prefix included) and the tensors in file order."""
    _check_arguments(tensor_dict, metadata)
    order = sorted(tensor_dict.items(), key=lambda kv: (_FILE_ORDER.index(kv[1].dtype), kv[0]))
    header: Dict[str, Any] = {}
    if metadata is not None:
        header["__metadata__"] = dict(sorted(metadata.items()))
    offset = 0
    for name, spec in order:
        elements = 1
        for d in spec.shape:
            elements *= d
        if elements * BITS[spec.dtype] != spec.data_len * 8:
            raise SafetensorError("Error while serializing: invalid shape, data type, or offset "
                                  "for tensor")
        header[name] = {"dtype": spec.dtype, "shape": spec.shape,
                        "data_offsets": [offset, offset + spec.data_len]}
        offset += spec.data_len
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, [spec for _, spec in order]


def _bytes_at(spec: TensorSpec) -> Any:
    """The spec's bytes in place (no copy)."""
    if spec.data_len == 0:
        return b""
    return (ctypes.c_char * spec.data_len).from_address(spec.data_ptr)


def serialize(tensor_dict: Dict[str, TensorSpec],
              metadata: Optional[Dict[str, str]] = None) -> bytes:
    """Serializes raw data: the bytes of a safetensors file holding `tensor_dict`
    ({name: TensorSpec}) and the text `metadata`."""
    header, specs = _layout(tensor_dict, metadata)
    return b"".join([header, *(bytes(_bytes_at(s)) for s in specs)])


def serialize_file(tensor_dict: Dict[str, TensorSpec], filename: Union[str, "os.PathLike[str]"],
                   metadata: Optional[Dict[str, str]] = None) -> None:
    """Serializes raw data into the file `filename` (as `serialize`, written in place)."""
    header, specs = _layout(tensor_dict, metadata)
    with open(filename, "wb") as f:
        f.write(header)
        for spec in specs:
            f.write(_bytes_at(spec))
