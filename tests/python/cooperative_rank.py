"""One rank of tests/python/test_cooperative.py, run under mpirun:
cooperative_rank.py CHECKPOINT OUT_DIR ROUND_BYTES [MISSING_ON_RANK].

Loads CHECKPOINT with ballast.load_cooperative over mpi4py (rank MISSING_ON_RANK names a file
that is not there instead) and writes OUT_DIR/rank<R>.json: whether its tensors are
byte-identical to a one-process ballast load, its stats, or the error it raised.
"""
import json
import os
import sys

from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import import_ballast  # noqa: E402

ballast = import_ballast()
from ballast.distributed import MpiCommunicator  # noqa: E402

checkpoint, out_dir, round_bytes = sys.argv[1], sys.argv[2], int(sys.argv[3])
missing_on = int(sys.argv[4]) if len(sys.argv) > 4 else -1
rank = MPI.COMM_WORLD.Get_rank()
source = checkpoint + ".missing" if rank == missing_on else checkpoint
report = {"rank": rank, "world": MPI.COMM_WORLD.Get_size()}
try:
    state, stats = ballast.load_cooperative(source, MpiCommunicator(MPI.COMM_WORLD),
                                            round_bytes=round_bytes, framework="np",
                                            with_stats=True)
    alone = ballast.Loader().load_checkpoint(checkpoint, framework="np")
    report["names"] = sorted(state)
    report["identical"] = sorted(state) == sorted(alone) and all(
        state[n].dtype == alone[n].dtype and state[n].shape == alone[n].shape
        and state[n].tobytes() == alone[n].tobytes() for n in alone)
    report["storage_bytes"] = stats.storage_bytes
    report["received_bytes"] = stats.received_bytes
    report["rounds"] = stats.rounds
except ballast.Error as e:
    report["error"] = {"type": type(e).__name__, "code": e.code, "text": str(e)}
with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
    json.dump(report, f)
