"""Cooperative loading across ranks (docs/distributed.md): each rank reads 1/N of a
checkpoint's stored bytes and the ranks exchange the parts, so that every rank ends with its
tensors while storage serves the checkpoint once in all.

    from mpi4py import MPI
    import ballast
    from ballast.distributed import MpiCommunicator
    state = ballast.load_cooperative("model.safetensors", MpiCommunicator(MPI.COMM_WORLD))

A communicator is any object with the methods of `Communicator` below; ballast calls them only
from the thread that called load_cooperative, holding the GIL, and releases the GIL while it
reads. MpiCommunicator adapts an mpi4py communicator, TorchCommunicator a torch.distributed
process group on CPU (gloo). Ranks that keep shards (Shard steps differing by rank) receive
only their shards through alltoallv.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Protocol, Sequence, Union

from ._loader import Loader
from ._frameworks import convert
from ._spec import SourceLike, TensorSpec, TransformsLike

_LARGEST_MESSAGE = 1 << 30  # bytes per MPI call: MPI counts are C ints


class Communicator(Protocol):
    """The collectives of a cooperative load; every rank calls each in the same order."""

    def rank(self) -> int: ...

    def size(self) -> int: ...

    def allgatherv_in_place(self, buffer: memoryview, counts: List[int],
                            displacements: List[int]) -> None:
        """Rank r's part, counts[r] bytes, lies at displacements[r] of `buffer`; afterwards
        every rank's buffer holds every part."""

    def broadcast(self, buffer: memoryview, root: int) -> None:
        """Rank `root`'s `buffer` into every rank's `buffer` (same size on every rank)."""

    def alltoallv(self, send: memoryview, send_counts: List[int], send_displacements: List[int],
                  recv: memoryview, recv_counts: List[int],
                  recv_displacements: List[int]) -> None:
        """Optional: send_counts[r] bytes at send_displacements[r] of `send` go to rank r, which
        receives them at its recv_displacements[this rank] of `recv`. Without it, ranks that
        keep shards (Shard steps) receive whole tensors and keep their part."""

    def allreduce_max(self, value: int) -> int:
        """The largest `value` over the ranks."""


class MpiCommunicator:
    """A Communicator over an mpi4py communicator (a duplicate of it, so ballast's messages
    never match the caller's). The buffers go to MPI without a copy."""

    def __init__(self, comm: Any = None) -> None:
        from mpi4py import MPI
        self._mpi = MPI
        self._comm = (MPI.COMM_WORLD if comm is None else comm).Dup()

    def rank(self) -> int:
        return self._comm.Get_rank()

    def size(self) -> int:
        return self._comm.Get_size()

    def allgatherv_in_place(self, buffer: memoryview, counts: List[int],
                            displacements: List[int]) -> None:
        if max(counts) + max(displacements) < _LARGEST_MESSAGE:
            self._comm.Allgatherv(self._mpi.IN_PLACE,
                                  [buffer, (counts, displacements), self._mpi.BYTE])
            return
        for root, (count, start) in enumerate(zip(counts, displacements)):
            self._bcast(buffer[start:start + count], root)

    def broadcast(self, buffer: memoryview, root: int) -> None:
        self._bcast(buffer, root)

    def alltoallv(self, send: memoryview, send_counts: List[int], send_displacements: List[int],
                  recv: memoryview, recv_counts: List[int],
                  recv_displacements: List[int]) -> None:
        if len(send) < _LARGEST_MESSAGE and len(recv) < _LARGEST_MESSAGE:
            self._comm.Alltoallv([send, (send_counts, send_displacements), self._mpi.BYTE],
                                 [recv, (recv_counts, recv_displacements), self._mpi.BYTE])
            return
        # Shift s pairs each rank with the ranks s ahead (to) and s behind (from).
        me, size = self.rank(), self.size()
        for shift in range(size):
            to, source = (me + shift) % size, (me - shift) % size
            requests = []
            for start in range(0, recv_counts[source], _LARGEST_MESSAGE):
                at = recv_displacements[source] + start
                n = min(_LARGEST_MESSAGE, recv_counts[source] - start)
                requests.append(self._comm.Irecv([recv[at:at + n], self._mpi.BYTE], source))
            for start in range(0, send_counts[to], _LARGEST_MESSAGE):
                at = send_displacements[to] + start
                n = min(_LARGEST_MESSAGE, send_counts[to] - start)
                requests.append(self._comm.Isend([send[at:at + n], self._mpi.BYTE], to))
            self._mpi.Request.Waitall(requests)

    def _bcast(self, buffer: memoryview, root: int) -> None:
        """Bcast in messages of at most 1 GiB."""
        for start in range(0, len(buffer), _LARGEST_MESSAGE):
            self._comm.Bcast([buffer[start:start + _LARGEST_MESSAGE], self._mpi.BYTE], root)

    def allreduce_max(self, value: int) -> int:
        return self._comm.allreduce(value, op=self._mpi.MAX)


class TorchCommunicator:
    """A Communicator over a torch.distributed process group with a CPU backend (gloo; the
    default group when `group` is None). Broadcasts go to torch on the buffers themselves; the
    all-gather pads each part to the largest (torch has no all-gather of variable parts), so
    it copies each part once and holds N times the largest part meanwhile."""

    def __init__(self, group: Any = None) -> None:
        import torch
        import torch.distributed as dist
        self._torch, self._dist, self._group = torch, dist, group

    def rank(self) -> int:
        return self._dist.get_rank(self._group)

    def size(self) -> int:
        return self._dist.get_world_size(self._group)

    def allgatherv_in_place(self, buffer: memoryview, counts: List[int],
                            displacements: List[int]) -> None:
        torch, largest, me = self._torch, max(counts), self.rank()
        if largest == 0:
            return
        whole = torch.frombuffer(buffer, dtype=torch.uint8)
        mine = torch.zeros(largest, dtype=torch.uint8)
        mine[:counts[me]] = whole[displacements[me]:displacements[me] + counts[me]]
        parts = [torch.empty(largest, dtype=torch.uint8) for _ in counts]
        self._dist.all_gather(parts, mine, group=self._group)
        for r, (count, start) in enumerate(zip(counts, displacements)):
            if r != me:
                whole[start:start + count] = parts[r][:count]

    def broadcast(self, buffer: memoryview, root: int) -> None:
        if len(buffer):
            self._dist.broadcast(self._torch.frombuffer(buffer, dtype=self._torch.uint8),
                                 src=self._global_rank(root), group=self._group)

    def alltoallv(self, send: memoryview, send_counts: List[int], send_displacements: List[int],
                  recv: memoryview, recv_counts: List[int],
                  recv_displacements: List[int]) -> None:
        """all_to_all_single (gloo has it) from the parts of `send` packed together, into a
        packed buffer then copied into place: each part is copied twice."""
        torch = self._torch
        with warnings.catch_warnings():  # `send` is read-only: torch only reads it here
            warnings.simplefilter("ignore", UserWarning)
            out = torch.frombuffer(send, dtype=torch.uint8) if len(send) else None
        packed = torch.cat([out[d:d + c] for c, d in zip(send_counts, send_displacements)]
                           if out is not None else [torch.empty(0, dtype=torch.uint8)])
        received = torch.empty(sum(recv_counts), dtype=torch.uint8)
        self._dist.all_to_all_single(received, packed, output_split_sizes=recv_counts,
                                     input_split_sizes=send_counts, group=self._group)
        whole = torch.frombuffer(recv, dtype=torch.uint8) if len(recv) else None
        at = 0
        for count, start in zip(recv_counts, recv_displacements):
            if count:
                whole[start:start + count] = received[at:at + count]
            at += count

    def allreduce_max(self, value: int) -> int:
        t = self._torch.tensor([value], dtype=self._torch.int64)
        self._dist.all_reduce(t, op=self._dist.ReduceOp.MAX, group=self._group)
        return int(t.item())

    def _global_rank(self, rank: int) -> int:
        if self._group is None:
            return rank
        get = getattr(self._dist, "get_global_rank", None)  # torch 2; 1.13 has it private
        return (get or self._dist.distributed_c10d._get_global_rank)(self._group, rank)


@dataclass(frozen=True)
class CooperativeStats:
    """What one rank did in a cooperative load."""
    storage_bytes: int   # tensor bytes this rank read from storage or the network
    received_bytes: int  # bytes that came from the other ranks
    rounds: int          # exchange rounds
    verified_bytes: int  # bytes of another rank's part read again to check it (verify_copies)


def load_cooperative(source: Union[SourceLike, Sequence[TensorSpec]], comm: Communicator,
                     patterns: Union[str, Sequence[str], None] = None,
                     transformations: TransformsLike = None, *,
                     loader: Optional[Loader] = None, round_bytes: int = 256 << 20,
                     verify_copies: bool = True, framework: Optional[str] = None,
                     with_stats: bool = False) -> Any:
    """Loads a checkpoint cooperatively: a collective, called by every rank of `comm`.

    `source` is a checkpoint (then `patterns` and `transformations` select and transform as in
    Loader.load_checkpoint, and the result is {name: tensor}) or a list of TensorSpec naming
    one source (the result is a list in their order; Shard steps may differ per rank). Each
    tensor equals what `loader` (default: a new ballast.Loader()) loads alone; each rank reads
    about 1/N of the stored bytes, `round_bytes` gathered per exchange round. With
    `verify_copies` each rank also reads another rank's part and the ranks compare digests
    before exchanging, so that copies that differ (a stale copy on one host) raise
    IntegrityError on every rank instead of mixing. With `with_stats`, returns (tensors,
    CooperativeStats). A failure on any rank (a missing file) raises the same ballast.Error on
    every rank, naming the rank.
    """
    loader = loader if loader is not None else Loader()
    by_name = not (isinstance(source, (list, tuple))
                   and all(isinstance(s, TensorSpec) for s in source))

    names: List[str] = []

    def make_specs() -> List[tuple]:
        if not by_name:
            return [s._native() for s in source]
        specs = loader._checkpoint_specs(source, patterns, transformations)
        names.extend(spec[0] for spec in specs)
        return specs

    natives, *counts = loader._native.load_cooperative(make_specs, comm, round_bytes,
                                                       verify_copies)
    tensors = [convert(t, framework) for t in natives]
    result: Union[Dict[str, Any], List[Any]] = tensors
    if by_name:
        result = dict(zip(names, tensors))
    return (result, CooperativeStats(*counts)) if with_stats else result
