"""ballast: loads model weights fast, safely and exactly.

    import ballast
    state = ballast.Loader().load_checkpoint("model.safetensors", framework="pt")

Reads safetensors, PyTorch .bin/.pt (a safe unpickler), NumPy, ONNX, GGUF and raw files from
paths, https:// URLs, hf://org/repo[@rev]/file, s3://bucket/key or bytes in memory. Tensors
are ballast.Tensor objects that torch.from_dlpack and numpy.from_dlpack take without a copy.
``ballast.safetensors`` is a drop-in for the ``safetensors`` package. See docs/python.md.
"""
from ._core import Tensor, TensorStream
from ._dtypes import dtype_name
from ._errors import (AuthError, CancelledError, DTypeMismatchError, Error, IntegrityError,
                      InvalidArgumentError, InvalidFormatError, IoError, LimitExceededError,
                      NetworkError, NotFoundError, ShapeMismatchError, SourceNotFoundError,
                      TensorNotFoundError, UnsupportedError)
from ._loader import Loader, Metadata, TensorInfo
from .distributed import load_cooperative
from ._spec import Cast, Quantize, Reshape, Scale, Shard, Slice, Source, TensorSpec, Transpose

__version__ = "0.1.0"

__all__ = [
    "AuthError", "CancelledError", "Cast", "DTypeMismatchError", "Error", "IntegrityError",
    "InvalidArgumentError", "InvalidFormatError", "IoError", "LimitExceededError", "Loader",
    "Metadata", "NetworkError", "NotFoundError", "Quantize", "Reshape", "Scale",
    "ShapeMismatchError", "Shard", "Slice", "Source", "SourceNotFoundError", "Tensor",
    "TensorInfo", "TensorNotFoundError", "TensorSpec", "TensorStream", "Transpose", "UnsupportedError",
    "dtype_name", "load_cooperative", "__version__",
]
