"""safe_open, its slices and deserialize, read through ballast: any format and source
ballast reads (a .bin, .gguf, ONNX model, hf://, https://, s3://, bytes), tensors in fresh
writable buffers as the `safetensors` package returns them, its exceptions for its failures."""
from __future__ import annotations

import json
import operator
import os
import struct
import threading
from typing import Any, Dict, List, Optional, Tuple

from .._errors import Error, SourceNotFoundError, TensorNotFoundError
from .._frameworks import to_torch
from .._loader import Loader, Metadata
from .._spec import Slice, TensorSpec
from ._format import BALLAST_NAMES, FRAMEWORK_NAMES, SafetensorError

_FRAMEWORKS = {"pt": "pt", "torch": "pt", "np": "np", "numpy": "np"}
_CODE_OF = {name: code for code, name in BALLAST_NAMES.items()}
_loaders: Dict[bool, Loader] = {}
_loaders_lock = threading.Lock()


def in_memory(source: Any) -> bool:
    """Whether `source` is bytes in memory rather than a path or URL."""
    return isinstance(source, (bytes, bytearray, memoryview))


def loader(source: Any = None) -> Loader:
    """The drop-in's shared Loader for `source`. Its tensors are writable and independent of
    the input and of each other call's, as the package's are: page-cached files are viewed
    through a private copy-on-write mapping per call (mapped_writes="call"), other files read
    into owned buffers, and bytes in memory copied (read_mode "read")."""
    copy = in_memory(source)
    with _loaders_lock:
        if copy not in _loaders:
            _loaders[copy] = Loader(read_mode="read") if copy else Loader()
        return _loaders[copy]


def call(function: Any, *args: Any, what: str = "Error while deserializing header",
         name: Optional[str] = None, **kwargs: Any) -> Any:
    """Runs a loader call, raising what the package raises for the same failure."""
    try:
        return function(*args, **kwargs)
    except SourceNotFoundError as e:
        raise FileNotFoundError(f"No such file or directory: {e.source}") from None
    except TensorNotFoundError:
        raise SafetensorError(f"File does not contain tensor {name}") from None
    except Error as e:
        raise SafetensorError(f"{what}: {e.message}") from None


def framework_of(framework: Any) -> str:
    name = _FRAMEWORKS.get(framework) if isinstance(framework, str) else None
    if name is None:
        raise SafetensorError(f"framework {framework} is invalid (ballast.safetensors reads "
                              "into pt/torch and np/numpy)")
    return name


def cuda_device(device: Any) -> Optional[str]:
    """ballast's name of a CUDA device given as the package takes it ("cuda", "cuda:1", 1,
    torch.device("cuda:1")), or None for the CPU and other devices (loaded to the CPU, then
    moved with torch's .to)."""
    if isinstance(device, int) and not isinstance(device, bool):
        return f"cuda:{device}"
    text = str(device) if device is not None else "cpu"
    if text == "cuda":
        return "cuda:0"
    if text.startswith("cuda:") and text[5:].isdigit():
        return text
    return None


def convert(tensor: Any, framework: str, device: Any = "cpu") -> Any:
    """A writable framework tensor viewing ballast's buffer. numpy's missing dtypes fail as
    with the package (TypeError for bf16 without ml_dtypes, AttributeError for fp8). A
    tensor ballast loaded to a CUDA device is handed to torch through DLPack (no copy)."""
    code = _CODE_OF[tensor.dtype]
    if framework == "np":
        import numpy

        if code == "BF16":
            dtype = numpy.dtype("bfloat16")
        elif code.startswith("F8") or code == "F4":
            dtype = numpy.dtype(getattr(numpy, FRAMEWORK_NAMES[code]))
        else:
            return numpy.from_dlpack(tensor)
        return numpy.from_dlpack(tensor.raw()).view(dtype).reshape(tensor.shape)
    result = to_torch(tensor)
    if device in ("cpu", None) or tensor.device != "cpu":
        return result
    return result.to(device)


# The safetensors package's own bound on a header's length.
_MAX_HEADER_BYTES = 100_000_000


def _header_length(prefix: bytes, size: int) -> Optional[int]:
    """The header length a safetensors file's first 8 bytes claim, or None when they cannot
    be one: fewer than 8 bytes, or more than the file holds or the format allows (a zip's
    "PK.." reads as petabytes)."""
    if len(prefix) < 8:
        return None
    (length,) = struct.unpack("<Q", prefix)
    return length if length <= min(size - 8, _MAX_HEADER_BYTES) else None


def safetensors_header(source: Any) -> Optional[Dict[str, Any]]:
    """The JSON header of a safetensors file (a local path or bytes), or None for any other
    source: other formats (.bin, .pt, .npz...), folders, ``*.index.json`` files, URLs. The
    claimed length is checked against the size before anything is read."""
    try:
        if isinstance(source, str):
            if not os.path.isfile(source):
                return None
            with open(source, "rb") as f:
                length = _header_length(f.read(8), os.fstat(f.fileno()).st_size)
                text = f.read(length) if length is not None else None
        else:
            view = memoryview(source).cast("B")
            length = _header_length(bytes(view[:8]), view.nbytes)
            text = bytes(view[8:8 + length]) if length is not None else None
        header = json.loads(text) if text is not None else None
    except (OSError, TypeError, ValueError, struct.error):
        return None
    if not isinstance(header, dict) or not all(
            isinstance(v, dict) and "data_offsets" in v
            for k, v in header.items() if k != "__metadata__"):
        return None
    return header


def offset_order(header: Dict[str, Any]) -> List[str]:
    """The tensor names of a safetensors header in the order of their bytes."""
    return [k for _, k in sorted((v["data_offsets"], k) for k, v in header.items()
                                 if k != "__metadata__")]


def load_all(source: Any, framework: str, device: Any = "cpu",
             what: str = "Error while deserializing header") -> Dict[str, Any]:
    """Every tensor of `source`, loaded concurrently, {name: tensor} in the order of their
    bytes (as the package returns them; by name for other formats)."""
    cuda = cuda_device(device) if framework == "pt" else None
    if cuda is None:
        loaded = call(loader(source).load_checkpoint, source, what=what)
    else:  # straight into device memory through ballast's host-to-device pipeline
        names = sorted(call(loader(source).get_metadata, source, what=what).tensors)
        tensors = call(loader(source).load_tensors,
                       [TensorSpec(name=n, device=cuda) for n in names], source, what=what)
        loaded = dict(zip(names, tensors))
    header = safetensors_header(source) if len(loaded) > 1 else None
    names = offset_order(header) if header is not None else sorted(loaded)
    return {name: convert(loaded[name], framework, device) for name in names}


class safe_open:
    """Opens a safetensors lazily and returns tensors as asked.

    Args:
        filename: the file to open (``str`` or ``os.PathLike``); with ballast also any other
            format (.bin/.pt, .npy, .gguf, ONNX) and source (``hf://``, ``https://``,
            ``s3://``, a ``ballast.Source`` or bytes).
        framework: ``"pt"``/``"torch"`` or ``"np"``/``"numpy"``.
        device: where torch tensors go (``"cpu"``, ``"cuda:0"``, an index). A CUDA device
            is loaded straight into device memory (docs/gpu.md); others through the CPU.
        backend: ``"mmap"`` or ``"pread"``; accepted for compatibility (ballast picks its
            own reads).
    """

    def __init__(self, filename: Any, framework: str, device: Any = "cpu", *,
                 backend: str = "mmap") -> None:
        self._framework = framework_of(framework)
        if backend not in ("mmap", "pread"):
            raise SafetensorError(f"backend {backend} is invalid")
        self._device = device
        self._source = os.fspath(filename) if isinstance(filename, os.PathLike) else filename
        # A Loader of the handle's own: its tensors share one private mapping of the file, as
        # the package's tensors of one handle share one storage; other handles' never do.
        self._loader = (loader(self._source) if in_memory(self._source)
                        else Loader(mapped_writes="loader"))
        self._meta: Optional[Metadata] = call(self._loader.get_metadata, self._source)
        self._header: Optional[Dict[str, Any]] = None

    def __enter__(self) -> "safe_open":
        """Start the context manager."""
        return self

    def __exit__(self, _exc_type: Any, _exc_value: Any, _traceback: Any) -> None:
        """Exits the context manager: the handle is closed."""
        self._meta = None

    def _open_meta(self) -> Metadata:
        if self._meta is None:
            raise SafetensorError("File is closed")
        return self._meta

    def _safetensors_header(self) -> Optional[Dict[str, Any]]:
        if self._header is None and self._open_meta().format == "safetensors":
            self._header = safetensors_header(self._source)
        return self._header

    def keys(self) -> List[str]:
        """The names of the tensors in the file, sorted."""
        return sorted(self._open_meta().tensors)

    def offset_keys(self) -> List[str]:
        """The names of the tensors in the file, in the order of their bytes."""
        header = self._safetensors_header()
        return self.keys() if header is None else offset_order(header)

    def metadata(self) -> Optional[Dict[str, str]]:
        """The free-form text metadata of the header (``__metadata__``), or None."""
        header = self._safetensors_header()
        if header is not None:
            return header.get("__metadata__")
        extra = self._open_meta().extra
        if not extra:
            return None
        return {k: v if isinstance(v, str) else json.dumps(v) for k, v in extra.items()}

    def get_tensor(self, name: str) -> Any:
        """The whole tensor `name`, in the framework the file was opened for."""
        self._open_meta()
        cuda = cuda_device(self._device) if self._framework == "pt" else None
        tensor = call(self._loader.load_tensor, name, self._source, name=name,
                      device=cuda or "cpu")
        return convert(tensor, self._framework, self._device)

    def get_tensors(self) -> Dict[str, Any]:
        """Every tensor of the file, {name: tensor}, loaded concurrently."""
        self._open_meta()
        return load_all(self._source, self._framework, self._device)

    def get_slice(self, name: str) -> "_SafeSlice":
        """A view object of the tensor `name`: index it (``[:, ::8]``, ``[3]``, ``[..., 1:]``)
        to read only the bytes of that slice."""
        info = self._open_meta().tensors.get(name)
        if info is None:
            raise SafetensorError(f"File does not contain tensor {name}")
        return _SafeSlice(self, name, info.shape, _CODE_OF[info.dtype])


class _SafeSlice:
    """A tensor of an open file, read only when indexed (safe_open.get_slice)."""

    def __init__(self, handle: safe_open, name: str, shape: Tuple[int, ...], code: str) -> None:
        self._handle, self._name, self._shape, self._code = handle, name, tuple(shape), code

    def get_shape(self) -> List[int]:
        """The tensor's shape."""
        return list(self._shape)

    def get_dtype(self) -> str:
        """The tensor's dtype as a format code ("F32", "BF16", ...)."""
        return self._code

    def _fail(self, index: Any, reason: str) -> SafetensorError:
        return SafetensorError(f"Error during slicing {index} with shape {list(self._shape)}: "
                               f"{reason}")

    def _plan(self, index: Any) -> Tuple[List[Slice], List[slice], List[int]]:
        """The ballast Slice steps (the box to read), the steps to take within it, and the
        shape of the result."""
        items = list(index) if isinstance(index, tuple) else [index]
        if sum(i is Ellipsis for i in items) > 1:
            raise self._fail(index, "an index can only have a single ellipsis")
        if Ellipsis in items:
            at = items.index(Ellipsis)
            items[at:at + 1] = [slice(None)] * max(0, len(self._shape) - len(items) + 1)
        if len(items) > len(self._shape):
            raise self._fail(index, "more slicing indexes than dimensions in tensor")
        reads, steps, shape = [], [], []
        for dim, size in enumerate(self._shape):
            item = items[dim] if dim < len(items) else slice(None)
            if isinstance(item, slice):
                start, stop, step = item.indices(size)
                if step <= 0:
                    raise self._fail(index, "negative or zero steps are not supported")
                stop = max(stop, start)
                steps.append(slice(None, None, step))
                shape.append(len(range(start, stop, step)))
            else:
                try:
                    i = operator.index(item)
                except TypeError:
                    raise TypeError(f"cannot index a tensor with {item!r}") from None
                if not -size <= i < size:
                    raise self._fail(index, f"index {i} out of bounds for tensor dimension "
                                            f"#{dim} of size {size}")
                start, stop = i % size, i % size + 1
                steps.append(slice(None))
            if (start, stop) != (0, size):
                reads.append(Slice(dim, start, stop))
        return reads, steps, shape

    def __getitem__(self, index: Any) -> Any:
        reads, steps, shape = self._plan(index)
        framework = self._handle._framework
        if 0 in shape:
            return _empty(shape, self._code, framework)
        tensor = call(self._handle._loader.load_tensor, self._name, self._handle._source,
                      name=self._name,
                      transforms=reads)
        part = convert(tensor, framework, self._handle._device)[tuple(steps)]
        if framework == "np":
            import numpy
            return numpy.ascontiguousarray(part).reshape(shape)
        return part.contiguous().reshape(shape)


def _empty(shape: List[int], code: str, framework: str) -> Any:
    if framework == "np":
        import numpy
        return numpy.empty(shape, dtype=FRAMEWORK_NAMES[code])
    import torch
    return torch.empty(shape, dtype=getattr(torch, FRAMEWORK_NAMES[code]))


def deserialize(data: bytes) -> List[Tuple[str, Dict[str, Any]]]:
    """Reads the bytes of a safetensors file: ``[(name, {"shape": [...], "dtype": "F32",
    "data": bytearray}), ...]``, sorted by name."""
    loaded = call(loader(data).load_checkpoint, data, what="Error while deserializing")
    return [(name, {"shape": list(t.shape), "dtype": _CODE_OF[t.dtype],
                    "data": bytearray(t.raw())}) for name, t in sorted(loaded.items())]
