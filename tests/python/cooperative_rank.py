"""One rank of tests/python/test_cooperative.py:
cooperative_rank.py mpi|torch CHECKPOINT OUT_DIR ROUND_BYTES MISSING_ON_RANK [STALE_ON_RANK].

Under mpirun with mpi4py (mpi), or as one of WORLD_SIZE processes of a torch.distributed gloo
group (torch: RANK and WORLD_SIZE in the environment, the group's store a file in OUT_DIR),
loads CHECKPOINT with ballast.load_cooperative (rank MISSING_ON_RANK names a file that is not
there instead, rank STALE_ON_RANK the copy CHECKPOINT.stale) and writes OUT_DIR/rank<R>.json: whether its tensors are byte-identical to a
one-process ballast load, its stats, or the error it raised; then loads a list of specs with
its tensor-parallel shard the same way and compares them too. ballast comes from PYTHONPATH.
"""
import json
import os
import sys

import ballast
from ballast.distributed import MpiCommunicator, TorchCommunicator

kind, checkpoint, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
round_bytes, missing_on = int(sys.argv[4]), int(sys.argv[5])
stale_on = int(sys.argv[6]) if len(sys.argv) > 6 else -1
if kind == "mpi":
    from mpi4py import MPI
    comm = MpiCommunicator(MPI.COMM_WORLD)
else:
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"file://{out_dir}/store",
                            rank=int(os.environ["RANK"]),
                            world_size=int(os.environ["WORLD_SIZE"]))
    comm = TorchCommunicator()
rank = comm.rank()
source = checkpoint + ".missing" if rank == missing_on else checkpoint
source = checkpoint + ".stale" if rank == stale_on else source
report = {"rank": rank, "world": comm.size()}
try:
    state, stats = ballast.load_cooperative(source, comm, round_bytes=round_bytes,
                                            framework="np", with_stats=True)
    alone = ballast.Loader().load_checkpoint(checkpoint, framework="np")
    report["names"] = sorted(state)
    report["identical"] = sorted(state) == sorted(alone) and all(
        state[n].dtype == alone[n].dtype and state[n].shape == alone[n].shape
        and state[n].tobytes() == alone[n].tobytes() for n in alone)
    # Specs with this rank's tensor-parallel shard: the list, in order, equals a lone load.
    shard = ballast.Shard(rank, comm.size())
    specs = [ballast.TensorSpec(n, source=checkpoint, transforms=[shard])
             for n in ("embed", "attn.k")]
    shards = ballast.load_cooperative(specs, comm, framework="np")
    lone = ballast.Loader().load_tensors(specs, framework="np")
    report["shards_identical"] = len(shards) == len(lone) and all(
        a.shape == b.shape and a.tobytes() == b.tobytes() for a, b in zip(shards, lone))
    report["storage_bytes"] = stats.storage_bytes
    report["received_bytes"] = stats.received_bytes
    report["rounds"] = stats.rounds
    report["verified_bytes"] = stats.verified_bytes
except ballast.Error as e:
    report["error"] = {"type": type(e).__name__, "code": e.code, "text": str(e)}
with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
    json.dump(report, f)
if kind == "torch":
    # torch 1.13's gloo group may abort at exit unless every rank ends it explicitly.
    dist.barrier()
    dist.destroy_process_group()
