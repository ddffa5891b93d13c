"""ballast.Loader: loads tensors from any format and source ballast reads, releasing the GIL
while it works, safe to share between threads, with an awaitable form of every call."""
from __future__ import annotations

import asyncio
import difflib
import fnmatch
import json
from dataclasses import dataclass, field
from typing import (Any, AsyncIterator, Callable, Dict, Iterable, Iterator, List, Mapping,
                    Optional, Sequence, Tuple, Union)

from . import _core
from ._frameworks import convert
from ._spec import (SourceLike, TensorSpec, TransformsLike, native_source, pattern_list,
                    transformation_text)

SpecLike = Union[TensorSpec, str]
PatternsLike = Union[str, Sequence[str], None]


@dataclass(frozen=True)
class TensorInfo:
    """What a checkpoint says about one tensor, before any byte of it is read."""
    dtype: str
    shape: Tuple[int, ...]
    nbytes: int


@dataclass(frozen=True)
class Metadata:
    """A checkpoint's table of contents (Loader.get_metadata).

    Attributes:
        format: "safetensors", "pytorch", "numpy", "onnx", "gguf" or "raw".
        tensors: name -> TensorInfo, sorted by name.
        total_size_bytes: the tensors' bytes together.
        dtypes: the dtypes that occur.
        extra: format-specific metadata (safetensors ``__metadata__``, GGUF key-value pairs,
            ONNX metadata_props, PyTorch non-tensor leaves), as JSON reads it.
        values: the same metadata as native values that keep the format's types: GGUF integers
            as int (u64 beyond 2**63 included), f32 and f64 as float, u8 arrays as bytes,
            other arrays (tokenizer strings, scores) as lists, keys in the file's order.
        files: the files that make up the checkpoint, in shard order.
        ignored_files: (name, reason) for each weight-like file of a folder that is not part
            of its checkpoint (a LoRA adapter, a variant, another format...).
    """
    format: str
    tensors: Dict[str, TensorInfo]
    total_size_bytes: int
    dtypes: List[str]
    extra: Dict[str, Any]
    files: List[str]
    ignored_files: List[Tuple[str, str]]
    values: Dict[str, Any] = field(default_factory=dict)


def _metadata(raw: dict) -> Metadata:
    return Metadata(format=raw["format"],
                    tensors={k: TensorInfo(*v) for k, v in raw["tensors"].items()},
                    total_size_bytes=raw["total_size_bytes"], dtypes=list(raw["dtypes"]),
                    extra=json.loads(raw["extra"]), files=list(raw["files"]),
                    ignored_files=[tuple(f) for f in raw["ignored_files"]],
                    values=raw["values"])


class Loader:
    """Loads model weights: safetensors, PyTorch .bin/.pt (safe unpickler), NumPy, ONNX, GGUF
    and raw files, from paths, https:// URLs, hf://org/repo[@rev]/file, s3://bucket/key or
    bytes in memory.

    Every keyword is a field of the C++ WeightLoaderConfig (omitted ones keep its default):

    Args:
        read_mode: "auto" (zero-copy mapping of page-cached files, else chunked reads),
            "mmap", "read", "io_uring" or "direct" (O_DIRECT).
        mapped_writes: whether tensors viewing a mapped file may be written in place, through
            a private copy-on-write mapping (a write never reaches the file). "call" (the
            default here; C++ defaults to "refused"): a mapping per call, so a write never
            reaches another call's tensors. "loader": one mapping per file for the Loader's
            life, shared by its calls (like one safetensors safe_open handle). "refused":
            read-only mappings (numpy marks them so; torch has no read-only tensors, and
            writing into one faults).
        num_threads: worker threads, 0..4096 (0: one per core).
        alignment: alignment of ballast's own buffers (power of two, 16..4096).
        read_chunk_bytes: reads larger than this are split and run concurrently (4 KiB..1 TiB).
        max_staging_bytes: bound on bounce and staging memory (4 KiB per thread..1 TiB).
        gpu_direct_storage: loads to a CUDA device through GPUDirect Storage (cuFile): "auto"
            (where libcufile and nvidia-fs are present, else pinned staging), "off" or
            "required" (fail with UnsupportedError where it cannot be used); docs/gpu.md.
        enable_caching: download remote files once into the cache (else read byte ranges).
        cache_dir: the URL/S3 object cache (default $BALLAST_CACHE or ~/.cache/ballast).
        max_cache_size: evict least recently used objects beyond this many bytes (0: no bound).
        max_concurrent_downloads: concurrent ranges of one large remote read (1..256).
        download_chunk_bytes: size of those ranges (4 KiB..1 TiB).
        download_timeout_seconds: connect timeout and longest stall of a transfer (0..86400 s,
            0 excluded).
        download_retries: retries of a failed request (0..100).
        enable_integrity_checks: verify hashes the source states.
        default_headers: HTTP headers sent with every request.
        ca_bundle: CA certificates for TLS (default $BALLAST_CA_BUNDLE, $CURL_CA_BUNDLE, the
            system's).
        verify_tls: check TLS certificates.
        on_download_progress: callable(source, bytes_done, bytes_total), called from download
            threads as downloads into the cache proceed.
        limits: dict of bounds on hostile input (max_header_bytes, max_tensors, max_dims,
            max_tensor_bytes, max_pickle_bytes, ...; see capabilities()["limits"]).

    Credentials and endpoints come from the same environment variables as the CLI (HF_TOKEN,
    HF_HUB_CACHE, AWS_*, BALLAST_CACHE...).

    Tensors come back as ballast.Tensor (DLPack, buffer protocol, .numpy(), .torch()), or
    with ``framework="pt"`` / ``"np"`` as torch tensors or numpy arrays, all without a copy.
    One Loader may be used from many threads at once; every call releases the GIL while it
    reads, and each has an ``..._async`` form for asyncio.
    """

    def __init__(self, *, read_mode: Optional[str] = None, mapped_writes: str = "call",
                 num_threads: Optional[int] = None,
                 alignment: Optional[int] = None, read_chunk_bytes: Optional[int] = None,
                 max_staging_bytes: Optional[int] = None,
                 gpu_direct_storage: Optional[str] = None, enable_caching: Optional[bool] = None,
                 cache_dir: Optional[str] = None, max_cache_size: Optional[int] = None,
                 max_concurrent_downloads: Optional[int] = None,
                 download_chunk_bytes: Optional[int] = None,
                 download_timeout_seconds: Optional[float] = None,
                 download_retries: Optional[int] = None,
                 enable_integrity_checks: Optional[bool] = None,
                 default_headers: Optional[Mapping[str, str]] = None,
                 ca_bundle: Optional[str] = None, verify_tls: Optional[bool] = None,
                 on_download_progress: Optional[Callable[[str, int, int], None]] = None,
                 limits: Optional[Mapping[str, Union[int, float]]] = None) -> None:
        options = {k: v for k, v in locals().items() if k != "self" and v is not None}
        if "default_headers" in options:
            options["default_headers"] = dict(options["default_headers"])
        if "limits" in options:
            options["limits"] = dict(options["limits"])
        self._native = _core.Loader(options)

    # -- loading -------------------------------------------------------------------------

    def load_tensor(self, spec: SpecLike, source: Optional[SourceLike] = None, *,
                    framework: Optional[str] = None, **fields: Any) -> Any:
        """Loads one tensor.

        `spec` is a TensorSpec, or a tensor name with the TensorSpec fields as keywords
        (``loader.load_tensor("w", "model.safetensors", transforms=[Cast("f16")])``);
        `source` is the default for a spec that names none. Returns a ballast.Tensor, or with
        `framework` ("pt"/"torch", "np"/"numpy") that framework's tensor.
        """
        return convert(self._native.load_tensor(_spec(spec, source, fields)), framework)

    def load_tensors(self, specs: Iterable[SpecLike], source: Optional[SourceLike] = None, *,
                     framework: Optional[str] = None) -> List[Any]:
        """Loads several tensors concurrently; the result is in the order of `specs`. The
        first failure is raised."""
        natives = [_spec(s, source, {}) for s in _spec_list(specs)]
        return [convert(t, framework) for t in self._native.load_tensors(natives)]

    def load_checkpoint(self, source: SourceLike, patterns: PatternsLike = None,
                        transformations: TransformsLike = None, *,
                        framework: Optional[str] = None) -> Dict[str, Any]:
        """Loads every tensor of `source` whose name matches one of the glob `patterns`
        (every tensor when None), each with `transformations`. Returns {name: tensor}.
        Raises NotFoundError when patterns match nothing."""
        loaded = self._native.load_checkpoint(native_source(source), pattern_list(patterns),
                                              transformation_text(transformations))
        return {name: convert(t, framework) for name, t in loaded.items()}

    def iter_tensors(self, source: Union[SourceLike, Sequence[TensorSpec]],
                     patterns: PatternsLike = None,
                     transformations: TransformsLike = None, *,
                     framework: Optional[str] = None) -> Iterator[Tuple[str, Any]]:
        """Yields (name, tensor) as each tensor completes (completion order), so an engine can
        use the first tensors while the rest load and drop each after use.

        `source` is a checkpoint (then `patterns` and `transformations` select and transform
        as in load_checkpoint) or a list of TensorSpec. Closing the iterator early stops
        the load."""
        if isinstance(source, (list, tuple)) and all(isinstance(s, TensorSpec) for s in source):
            natives = [s._native() for s in source]
        else:
            natives = self._checkpoint_specs(source, patterns, transformations)
        for name, tensor in self._native.stream(natives):
            yield name, convert(tensor, framework)

    def _checkpoint_specs(self, source: SourceLike, patterns: PatternsLike,
                          transformations: TransformsLike) -> List[tuple]:
        every = list(self.get_metadata(source).tensors)
        names = every
        patterns = pattern_list(patterns)
        if patterns:
            names = [n for n in every if any(n == p or fnmatch.fnmatchcase(n, p)
                                             for p in patterns)]
            if not names:
                from ._errors import TensorNotFoundError
                closest = difflib.get_close_matches(patterns[0], every, n=3)
                text = f"no tensor matches {', '.join(patterns)}" + (
                    "; closest: " + ", ".join(f"'{n}'" for n in closest) if closest else "")
                raise TensorNotFoundError(f"not_found: {text}", message=text,
                                          tensor=", ".join(patterns))
        text = transformation_text(transformations)
        return [TensorSpec(n, source=source, transforms=text)._native() for n in names]

    # -- about sources -------------------------------------------------------------------

    def get_metadata(self, source: SourceLike) -> Metadata:
        """The checkpoint's tensors (dtype, shape, size) and metadata, reading only headers."""
        return _metadata(self._native.get_metadata(native_source(source)))

    def is_available(self, source: SourceLike) -> bool:
        """Whether `source` exists and can be opened (a HEAD for remote sources)."""
        return self._native.is_available(native_source(source))

    def preload(self, source: SourceLike) -> None:
        """Makes later loads of `source` cheap: opens, parses and, for remote sources,
        downloads it into the cache."""
        self._native.preload(native_source(source))

    def capabilities(self) -> Dict[str, Any]:
        """What this loader can do: formats, sources, transformations, devices, limits."""
        return self._native.capabilities()

    # -- asyncio -------------------------------------------------------------------------

    async def load_tensor_async(self, spec: SpecLike, source: Optional[SourceLike] = None, *,
                                framework: Optional[str] = None, **fields: Any) -> Any:
        """load_tensor on a worker thread: awaiting it does not block the event loop."""
        return await asyncio.to_thread(self.load_tensor, spec, source, framework=framework,
                                       **fields)

    async def load_tensors_async(self, specs: Iterable[SpecLike],
                                 source: Optional[SourceLike] = None, *,
                                 framework: Optional[str] = None) -> List[Any]:
        """load_tensors, awaitable."""
        return await asyncio.to_thread(self.load_tensors, _spec_list(specs), source,
                                       framework=framework)

    async def load_checkpoint_async(self, source: SourceLike,
                                    patterns: PatternsLike = None,
                                    transformations: TransformsLike = None,
                                    *, framework: Optional[str] = None) -> Dict[str, Any]:
        """load_checkpoint, awaitable."""
        return await asyncio.to_thread(self.load_checkpoint, source, patterns, transformations,
                                       framework=framework)

    async def iter_tensors_async(self, source: Union[SourceLike, Sequence[TensorSpec]],
                                 patterns: PatternsLike = None,
                                 transformations: TransformsLike = None, *,
                                 framework: Optional[str] = None
                                 ) -> AsyncIterator[Tuple[str, Any]]:
        """iter_tensors as an async iterator (``async for name, t in ...``)."""
        iterator = await asyncio.to_thread(self.iter_tensors, source, patterns,
                                           transformations, framework=framework)
        done = object()
        while (item := await asyncio.to_thread(next, iterator, done)) is not done:
            yield item

    async def get_metadata_async(self, source: SourceLike) -> Metadata:
        """get_metadata, awaitable."""
        return await asyncio.to_thread(self.get_metadata, source)

    async def is_available_async(self, source: SourceLike) -> bool:
        """is_available, awaitable."""
        return await asyncio.to_thread(self.is_available, source)

    async def preload_async(self, source: SourceLike) -> None:
        """preload, awaitable."""
        await asyncio.to_thread(self.preload, source)


def _spec(spec: SpecLike, source: Optional[SourceLike], fields: Dict[str, Any]) -> tuple:
    if isinstance(spec, TensorSpec):
        if fields:
            raise TypeError("give either a TensorSpec or a name with TensorSpec fields")
        return spec._native(source)
    return TensorSpec(spec, **fields)._native(source)


def _spec_list(specs: Union[SpecLike, Iterable[SpecLike]]) -> List[SpecLike]:
    """Specs as a list: a single name or TensorSpec is a list of one, never characters."""
    if isinstance(specs, (str, TensorSpec)):
        return [specs]
    return list(specs)
