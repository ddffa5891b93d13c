"""ballast.load_cooperative over mpi4py under a real mpirun (tests/python/cooperative_rank.py
is each rank): every rank ends with tensors byte-identical to a one-process load while it read
about 1/N of the stored bytes, and a missing file on one rank raises the same ballast error on
every rank instead of a hang. Without mpirun or mpi4py: fails under CI, skipped elsewhere."""
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
from safetensors.numpy import save_file

from conftest import require

RANK_PROGRAM = pathlib.Path(__file__).with_name("cooperative_rank.py")
ROWS = 64  # rows per tensor: the plan cuts tensors at rows


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    require(shutil.which("mpirun"), "mpirun", "apt-get install openmpi-bin")
    require(importlib.util.find_spec("mpi4py"), "mpi4py", "scripts/setup.sh")
    rng = np.random.default_rng(29)
    tensors = {
        "embed": rng.standard_normal((ROWS, 256), dtype=np.float32),
        "attn.q": rng.standard_normal((ROWS, 96)).astype(np.float16),
        "attn.k": rng.integers(-2**40, 2**40, (ROWS, 33), dtype=np.int64),
        "norm": rng.standard_normal(ROWS, dtype=np.float32),
        "bytes": rng.integers(0, 255, (ROWS, 7), dtype=np.uint8),
    }
    path = tmp_path_factory.mktemp("coop") / "model.safetensors"
    save_file(tensors, str(path))
    return path, sum(t.nbytes for t in tensors.values()), max(t.nbytes // ROWS for t in
                                                               tensors.values())


def run_ranks(ranks, checkpoint, tmp_path, round_bytes, missing_on=-1):
    """Every rank's report, by rank, after a bounded mpirun (a hang ends in a timeout)."""
    command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
               "-np", str(ranks), sys.executable, str(RANK_PROGRAM), str(checkpoint),
               str(tmp_path), str(round_bytes), str(missing_on)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1"))
    assert result.returncode == 0, result.stdout + result.stderr
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(ranks)]


@pytest.mark.parametrize("ranks", [2, 3])
def test_every_rank_ends_with_the_whole_checkpoint_reading_its_share(checkpoint, tmp_path,
                                                                     ranks):
    path, total, row_bytes = checkpoint
    reports = run_ranks(ranks, path, tmp_path, round_bytes=16 << 10)
    for report in reports:
        assert report.get("error") is None, report
        assert report["identical"], report
        assert report["names"] == ["attn.k", "attn.q", "bytes", "embed", "norm"]
        assert report["rounds"] > 1
        # 1/N of the stored bytes, within a row (and its alignment) at each cut.
        assert abs(report["storage_bytes"] - total / ranks) <= 2 * row_bytes + 64, report
        assert report["storage_bytes"] + report["received_bytes"] == total
    assert sum(r["storage_bytes"] for r in reports) == total


def test_a_missing_file_on_one_rank_raises_the_same_error_on_every_rank(checkpoint, tmp_path):
    path, _, _ = checkpoint
    reports = run_ranks(2, path, tmp_path, round_bytes=16 << 10, missing_on=1)
    errors = [r.get("error") for r in reports]
    assert errors[0] is not None and errors[0] == errors[1], errors
    assert errors[0]["code"] == "not_found"
    assert "rank 1" in errors[0]["text"] and "model.safetensors.missing" in errors[0]["text"]
