"""What to load: sources, transformation steps and tensor specs, as small frozen dataclasses.

Each turns itself into the plain values the native loader takes: transformations into the
CLI's --transform syntax, sources and specs into tuples.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from ._dtypes import dtype_name
from ._errors import InvalidArgumentError

DTypeLike = Any  # a str ("f32", "bfloat16"), torch.dtype or numpy.dtype
Location = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Any]


@dataclass(frozen=True)
class Source:
    """A checkpoint with options, where a plain string or bytes object is not enough.

    Args:
        location: a path (file, folder, ``*.index.json``), ``https://...`` URL,
            ``hf://org/repo[@revision][/file]``, ``s3://bucket/key``, or a bytes-like object
            (read in place, no copy).
        format: force a format ("safetensors", "pytorch", "numpy", "onnx", "gguf", "raw")
            instead of detecting it.
        tensor: for a local file, restrict the source to this one tensor.
        dtype, shape, offset: with format="raw", the stored dtype, shape and bytes to skip.
        s3_region, s3_endpoint: for ``s3://`` sources (default: the environment, as the CLI).
        headers: extra HTTP headers for an ``https://`` source.
    """

    location: Location
    format: Optional[str] = None
    tensor: Optional[str] = None
    dtype: Optional[DTypeLike] = None
    shape: Optional[Sequence[int]] = None
    offset: int = 0
    s3_region: Optional[str] = None
    s3_endpoint: Optional[str] = None
    headers: Optional[Mapping[str, str]] = None

    def _native(self) -> tuple:
        return (_location(self.location), self.format, self.tensor,
                None if self.dtype is None else dtype_name(self.dtype),
                list(self.shape or ()), self.offset, self.s3_region, self.s3_endpoint,
                dict(self.headers or {}))


SourceLike = Union[Source, Location]


def _location(location: Location) -> Any:
    if isinstance(location, os.PathLike):
        return os.fspath(location)
    return location


def native_source(source: SourceLike) -> Any:
    """The value the native loader takes for `source`."""
    if source is None:
        raise InvalidArgumentError("invalid_argument: no source given",
                                   message="no source given")
    return source._native() if isinstance(source, Source) else _location(source)


@dataclass(frozen=True)
class Transpose:
    """Swap two dimensions (a view step: only the read order changes)."""
    dim0: int = 0
    dim1: int = 1

    def _text(self) -> str:
        return f"transpose:{self.dim0}:{self.dim1}"


@dataclass(frozen=True)
class Reshape:
    """Give the tensor a new shape with the same number of elements; one entry may be -1."""
    shape: Sequence[int]

    def _text(self) -> str:
        return "reshape:" + ":".join(str(int(d)) for d in self.shape)


@dataclass(frozen=True)
class Cast:
    """Convert the values to `dtype` (rounding to nearest even; bf16, f16, fp8, ints...)."""
    dtype: DTypeLike

    def _text(self) -> str:
        return f"cast:{dtype_name(self.dtype)}"


@dataclass(frozen=True)
class Slice:
    """Keep ``[start:end]`` along `dim` (Python semantics, negative indices from the end, no
    step). Only the bytes of the slice are read."""
    dim: int = 0
    start: Optional[int] = None
    end: Optional[int] = None

    def _text(self) -> str:
        def index(i: Optional[int]) -> str:
            return "" if i is None else str(int(i))
        return f"slice:{self.dim}:{index(self.start)}:{index(self.end)}"


@dataclass(frozen=True)
class Scale:
    """Multiply every value by `factor`."""
    factor: float

    def _text(self) -> str:
        return f"scale:{float(self.factor)!r}"


@dataclass(frozen=True)
class Shard:
    """Keep tensor-parallel rank `rank`'s part of `dim` out of `world` ranks: exactly
    ``torch.chunk(t, world, dim)[rank]`` (chunks of ceil(n / world); trailing ranks may get
    fewer rows or none). For a fused tensor (qkv, gate_up), `parts` gives the sizes of its
    parts along `dim`: each part is chunked and the rank's pieces are concatenated in order.
    Only the rank's bytes are read."""
    rank: int
    world: int
    dim: int = 0
    parts: Optional[Sequence[int]] = None

    def _text(self) -> str:
        text = f"shard:{int(self.rank)}/{int(self.world)}:{int(self.dim)}"
        if self.parts:
            text += ":" + "+".join(str(int(p)) for p in self.parts)
        return text


@dataclass(frozen=True)
class Quantize:
    """Quantize while loading; the result is a bundle whose ``parts`` hold the pieces.

    Args:
        scheme: "int8" (per-row scales), "int4" (groups), "fp8", "gptq" or "awq".
        symmetric: int8 only: symmetric (no zero point) or asymmetric.
        group_size: int4, gptq, awq: elements per group along the input dimension.
        fp8_dtype: fp8 only: "f8_e4m3" or "f8_e5m2".
        bits: gptq and awq: bits per weight.
        desc_act: gptq only: activation-order groups (emits g_idx).
        zero_point: awq only: asymmetric with zero points.
    """
    scheme: str = "int8"
    symmetric: bool = True
    group_size: int = 128
    fp8_dtype: DTypeLike = "f8_e4m3"
    bits: int = 4
    desc_act: bool = False
    zero_point: bool = True

    def _text(self) -> str:
        if self.scheme == "int8":
            return "quantize:int8:" + ("sym" if self.symmetric else "asym")
        if self.scheme == "int4":
            return f"quantize:int4:{self.group_size}"
        if self.scheme == "fp8":
            return "quantize:fp8:" + dtype_name(self.fp8_dtype).removeprefix("f8_")
        if self.scheme == "gptq":
            return f"quantize:gptq:{self.bits}:{self.group_size}" + (
                ":desc_act" if self.desc_act else "")
        if self.scheme == "awq":
            return f"quantize:awq:{self.bits}:{self.group_size}" + (
                ":zp" if self.zero_point else "")
        raise InvalidArgumentError(
            f"invalid_argument: quantize scheme is int8, int4, fp8, gptq or awq, not "
            f"'{self.scheme}'", message="unknown quantize scheme")


Transformation = Union[Transpose, Reshape, Cast, Slice, Scale, Quantize, Shard, str]


TransformsLike = Union[Transformation, Iterable[Transformation], None]


def transformation_text(steps: TransformsLike) -> str:
    """The steps in the CLI's --transform syntax. A str is taken as written (one step or a
    comma-separated list of them), never as a sequence of characters; a single step object
    is a list of one."""
    if steps is None:
        return ""
    if isinstance(steps, str):
        return steps
    if hasattr(steps, "_text"):
        return steps._text()
    return ",".join(s if isinstance(s, str) else s._text() for s in steps)


def pattern_list(patterns: Union[str, Iterable[str], None]) -> list:
    """Glob patterns as a list: a single str is one pattern, never its characters."""
    if patterns is None:
        return []
    if isinstance(patterns, str):
        return [patterns]
    return list(patterns)


@dataclass(frozen=True)
class TensorSpec:
    """One tensor to load.

    Args:
        name: the tensor's name in the checkpoint ("" when the source holds one tensor).
        shape: the expected shape after the transformations (checked), or None.
        dtype: the expected dtype after the transformations (checked; to convert, add Cast).
        device: "cpu" or "cuda:N" (straight into CUDA device memory, docs/gpu.md).
        source: where it lives (see Source); Loader methods can supply a default.
        transforms: steps applied in order while loading (Cast, Transpose, Slice, ...): a
            list of them, one step, or the text syntax ("cast:f16,transpose").
    """
    name: str = ""
    shape: Optional[Sequence[int]] = None
    dtype: Optional[DTypeLike] = None
    device: str = "cpu"
    source: Optional[SourceLike] = None
    transforms: TransformsLike = field(default_factory=tuple)

    def _native(self, default_source: Optional[SourceLike] = None) -> tuple:
        source = self.source if self.source is not None else default_source
        return (self.name, None if self.shape is None else [int(d) for d in self.shape],
                None if self.dtype is None else dtype_name(self.dtype), self.device,
                native_source(source), transformation_text(self.transforms))
