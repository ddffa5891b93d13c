"""ballast.safetensors.numpy: the `safetensors.numpy` functions (save, save_file, load,
load_file) with the package's signatures and byte-identical output."""
import os
import sys
from typing import Dict, List, Optional, Union

import numpy as np

from ._format import TensorSpec, serialize, serialize_file
from ._open import deserialize, load_all


def _specs(tensor_dict: Dict[str, np.ndarray], keep_alive: List) -> Dict[str, TensorSpec]:
    """TensorSpecs of little-endian, contiguous copies where the arrays are not already."""
    specs = {}
    for name, array in tensor_dict.items():
        if array.dtype.byteorder == ">" or (array.dtype.byteorder == "=" and
                                             sys.byteorder == "big"):
            array = array.byteswap().view(array.dtype.newbyteorder("<"))
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        keep_alive.append(array)
        specs[name] = TensorSpec(dtype=array.dtype.name, shape=array.shape,
                                 data_ptr=array.ctypes.data, data_len=array.nbytes)
    return specs


def save(tensor_dict: Dict[str, np.ndarray], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The bytes of a safetensors file holding `tensor_dict`, with the text `metadata`."""
    keep_alive: List = []
    return serialize(_specs(tensor_dict, keep_alive), metadata=metadata)


def save_file(tensor_dict: Dict[str, np.ndarray], filename: Union[str, os.PathLike],
              metadata: Optional[Dict[str, str]] = None) -> None:
    """Writes `tensor_dict` (and the text `metadata`) as the safetensors file `filename`."""
    keep_alive: List = []
    serialize_file(_specs(tensor_dict, keep_alive), filename, metadata=metadata)


def load(data: bytes) -> Dict[str, np.ndarray]:
    """The arrays of a safetensors file given as bytes."""
    return load_all(data, "np", what="Error while deserializing")


def load_file(filename: Union[str, os.PathLike], *, backend: str = "mmap") -> Dict[str, np.ndarray]:
    """Every array of `filename` (any format and source ballast reads), {name: array}, read
    concurrently into writable buffers. `backend` is accepted for compatibility."""
    return load_all(os.fspath(filename) if isinstance(filename, os.PathLike) else filename, "np")


__all__ = ["save", "save_file", "load", "load_file", "deserialize"]
