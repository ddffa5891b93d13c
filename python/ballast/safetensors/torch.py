"""ballast.safetensors.torch: the `safetensors.torch` functions (save, save_file, load,
load_file, save_model, load_model and the shared-tensor helpers) with the package's
signatures, exceptions and byte-identical output."""
import os
from collections import defaultdict
from typing import Any, Dict, List, Optional, Set, Tuple, Union

import torch

from ._format import TensorSpec, serialize, serialize_file
from ._open import deserialize, load_all


def storage_ptr(tensor: torch.Tensor) -> int:
    """The address of the storage under `tensor` (0 for meta tensors)."""
    try:
        return tensor.untyped_storage().data_ptr()
    except Exception:
        try:
            return tensor.storage().data_ptr()
        except NotImplementedError:
            return 0


def storage_size(tensor: torch.Tensor) -> int:
    """The size in bytes of the storage under `tensor`."""
    try:
        return tensor.untyped_storage().nbytes()
    except AttributeError:
        try:
            return tensor.storage().size() * tensor.element_size()
        except NotImplementedError:
            return tensor.nelement() * tensor.element_size()


def _extent(tensor: torch.Tensor) -> Tuple[int, int]:
    """[first byte, one past the last byte] that `tensor` covers."""
    start = tensor.data_ptr()
    if not tensor.nelement():
        return start, start
    return start, tensor.view(-1)[-1].data_ptr() + tensor.element_size()


def _find_shared_tensors(state_dict: Dict[str, torch.Tensor]) -> List[Set[str]]:
    """Groups of names whose tensors overlap in memory (each unshared name alone)."""
    by_storage: Dict[Any, Set[str]] = defaultdict(set)
    for name, tensor in state_dict.items():
        if tensor.device.type != "meta" and storage_ptr(tensor) and storage_size(tensor):
            by_storage[(tensor.device, storage_ptr(tensor), storage_size(tensor))].add(name)
    groups: List[Set[str]] = []
    for names in by_storage.values():
        if len(names) < 2:
            groups.append(set(names))
            continue
        last_stop = None
        for start, stop, name in sorted((*_extent(state_dict[n]), n) for n in names):
            if last_stop is not None and start < last_stop:
                groups[-1].add(name)
            else:
                groups.append({name})
            last_stop = stop
    return groups


def _is_complete(tensor: torch.Tensor) -> bool:
    """Whether `tensor` covers its whole storage."""
    return (tensor.data_ptr() == storage_ptr(tensor)
            and tensor.nelement() * tensor.element_size() == storage_size(tensor))


def _remove_duplicate_names(state_dict: Dict[str, torch.Tensor], *,
                            preferred_names: Optional[List[str]] = None,
                            discard_names: Optional[List[str]] = None) -> Dict[str, List[str]]:
    """For each group of shared tensors, the name to keep -> the names to drop. The kept name
    covers the whole storage: the first of `preferred_names` among those, else the first not
    in `discard_names`, else the first."""
    preferred, discard = set(preferred_names or ()), set(discard_names or ())
    removals: Dict[str, List[str]] = defaultdict(list)
    for group in _find_shared_tensors(state_dict):
        complete = {name for name in group if _is_complete(state_dict[name])}
        if not complete:
            raise RuntimeError(
                f"Error while trying to find names to remove to save state dict, but found no "
                f"suitable name to keep for saving amongst: {group}. None is covering the "
                "entire storage. Refusing to save/load the model since you could be storing "
                "much more memory than needed. Please refer to "
                "https://huggingface.co/docs/safetensors/torch_shared_tensors for more "
                "information. Or open an issue.")
        keep = min(complete & preferred or complete - discard or complete)
        for name in sorted(group - {keep}):
            removals[keep].append(name)
    return removals


def _specs(tensors: Dict[str, torch.Tensor], keep_alive: List) -> Dict[str, TensorSpec]:
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    for name, tensor in tensors.items():
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected torch.Tensor but received "
                             f"{type(tensor)}")
    sparse = [name for name, tensor in tensors.items() if tensor.layout != torch.strided]
    if sparse:
        raise ValueError(f"You are trying to save a sparse tensors: `{sparse}` which this "
                         "library does not support. You can make it a dense tensor before "
                         "saving with `.to_dense()` but be aware this might make a much larger "
                         "file than needed.")
    shared = [group for group in _find_shared_tensors(tensors) if len(group) > 1]
    if shared:
        raise RuntimeError(
            f"Some tensors share memory, this will lead to duplicate memory on disk and "
            f"potential differences when loading them again: {shared}. A potential way to "
            "correctly save your model is to use `save_model`. More information at "
            "https://huggingface.co/docs/safetensors/torch_shared_tensors")
    specs = {}
    for name, tensor in tensors.items():
        if not tensor.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{name}` which is not "
                "allowed. It either means you are trying to save tensors which are reference "
                "of each other in which case it's recommended to save only the full tensors, "
                "and reslice at load time, or simply call `.contiguous()` on your tensor to "
                "pack it before saving.")
        cpu = tensor.to("cpu")
        keep_alive.append(cpu)
        specs[name] = TensorSpec(dtype=str(tensor.dtype).split(".")[-1], shape=tensor.shape,
                                 data_ptr=cpu.data_ptr(),
                                 data_len=cpu.nelement() * cpu.element_size())
    return specs


def save(tensors: Dict[str, torch.Tensor], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The bytes of a safetensors file holding `tensors`, with the text `metadata`."""
    keep_alive: List = []
    return serialize(_specs(tensors, keep_alive), metadata=metadata)


def save_file(tensors: Dict[str, torch.Tensor], filename: Union[str, os.PathLike],
              metadata: Optional[Dict[str, str]] = None) -> None:
    """Writes `tensors` (and the text `metadata`) as the safetensors file `filename`."""
    keep_alive: List = []
    serialize_file(_specs(tensors, keep_alive), filename, metadata=metadata)


def load(data: bytes) -> Dict[str, torch.Tensor]:
    """The tensors of a safetensors file given as bytes."""
    return load_all(data, "pt", what="Error while deserializing")


def load_file(filename: Union[str, os.PathLike], device: Union[str, int] = "cpu", *,
              backend: str = "mmap") -> Dict[str, torch.Tensor]:
    """Every tensor of `filename` (any format and source ballast reads), {name: tensor},
    read concurrently into writable buffers, then moved to `device`. `backend` is accepted
    for compatibility."""
    source = os.fspath(filename) if isinstance(filename, os.PathLike) else filename
    return load_all(source, "pt", device)


def save_model(model: torch.nn.Module, filename: str, metadata: Optional[Dict[str, str]] = None,
               force_contiguous: bool = True) -> None:
    """Saves `model`'s state dict to `filename`, keeping one name of each group of shared
    tensors (each dropped name is recorded in the metadata as pointing to the kept one)."""
    state_dict = model.state_dict()
    for kept, dropped in _remove_duplicate_names(state_dict).items():
        for name in dropped:
            metadata = {} if metadata is None else metadata
            metadata.setdefault(name, kept)
            del state_dict[name]
    if force_contiguous:
        state_dict = {k: v.contiguous() for k, v in state_dict.items()}
    try:
        save_file(state_dict, filename, metadata=metadata)
    except ValueError as e:
        raise ValueError(f"{e} Or use save_model(..., force_contiguous=True), read the docs "
                         "for potential caveats.") from None


def load_model(model: torch.nn.Module, filename: Union[str, os.PathLike], strict: bool = True,
               device: Union[str, int] = "cpu", *,
               backend: str = "mmap") -> Tuple[List[str], List[str]]:
    """Loads `filename` into `model`, undoing save_model's removal of shared names. Returns
    (missing, unexpected); with `strict`, raises RuntimeError when either is not empty."""
    state_dict = load_file(filename, device=device, backend=backend)
    shared = _remove_duplicate_names(model.state_dict(), preferred_names=list(state_dict))
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing = set(missing)
    for dropped in shared.values():
        for name in dropped:
            if name in missing:
                missing.remove(name)
            else:
                unexpected.append(name)
    if strict and (missing or unexpected):
        error = f"Error(s) in loading state_dict for {model.__class__.__name__}:"
        if missing:
            error += "\n    Missing key(s) in state_dict: " + ", ".join(
                f'"{k}"' for k in sorted(missing))
        if unexpected:
            error += "\n    Unexpected key(s) in state_dict: " + ", ".join(
                f'"{k}"' for k in sorted(unexpected))
        raise RuntimeError(error)
    return missing, unexpected


__all__ = ["save", "save_file", "load", "load_file", "save_model", "load_model",
           "storage_ptr", "storage_size", "deserialize"]
