"""A drop-in for the `safetensors` package (its 0.8 Python API), read by ballast.

``import ballast.safetensors as safetensors`` keeps code written for the package working:
the same names, signatures, return types and exceptions, and byte-identical files when
saving. Beyond the package, safe_open and load_file also read every other format and source
ballast reads, and get_slice reads only the bytes of the slice. See docs/python.md.
"""
from ._format import SafetensorError, TensorSpec, serialize, serialize_file
from ._open import deserialize, safe_open

__version__ = "0.8.0"


def _safe_open_handle(f, framework, device="cpu", *, backend="mmap"):
    """safe_open on an open binary file object: its path where it has one, else its bytes."""
    name = getattr(f, "name", None)
    return safe_open(name if isinstance(name, str) else f.read(), framework, device,
                     backend=backend)


__all__ = ["SafetensorError", "TensorSpec", "deserialize", "safe_open", "serialize",
           "serialize_file", "__version__"]
