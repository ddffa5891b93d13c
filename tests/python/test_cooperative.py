"""ballast.load_cooperative across real processes (tests/python/cooperative_rank.py is each
rank): under mpirun with mpi4py, and as a torch.distributed gloo group with Debian's torch.
Every rank ends with numpy arrays byte-identical to a one-process load while it read about 1/N
of the stored bytes; a missing file on one rank raises the same ballast error on every rank
instead of a hang. Without mpirun, mpi4py or torch: fails under CI, skipped elsewhere."""
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

from conftest import (DEBIAN_PYTHON, import_ballast, package_path, require, start_process,
                      stop_process)

ballast = import_ballast()
RANK_PROGRAM = pathlib.Path(__file__).with_name("cooperative_rank.py")
ROWS = 64  # rows per tensor: the plan cuts tensors at rows
NAMES = ["attn.k", "attn.q", "bytes", "embed", "norm"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """(path, stored bytes, the largest row's bytes)."""
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
    return (path, sum(t.nbytes for t in tensors.values()),
            max(t.nbytes // ROWS for t in tensors.values()))


def mpi_ranks(ranks, checkpoint, out, missing_on=-1, stale_on=-1):
    """Every rank's report, by rank, after a bounded mpirun (a hang ends in a timeout)."""
    require(shutil.which("mpirun"), "mpirun", "apt-get install openmpi-bin")
    require(importlib.util.find_spec("mpi4py"), "mpi4py", "scripts/setup.sh")
    command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
               "-np", str(ranks), sys.executable, str(RANK_PROGRAM), "mpi", str(checkpoint),
               str(out), str(16 << 10), str(missing_on), str(stale_on)]
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(ballast.__file__).parents[1]))
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(ranks)]


def torch_ranks(ranks, checkpoint, out, missing_on=-1):
    """The same with Debian's torch: `ranks` processes of one gloo group."""
    require(os.access(DEBIAN_PYTHON, os.X_OK) and subprocess.run(
        [DEBIAN_PYTHON, "-I", "-c", "import torch.distributed"]).returncode == 0,
        "Debian's python3-torch", "scripts/setup.sh")
    env = dict(os.environ, PYTHONPATH=str(package_path(ballast)), WORLD_SIZE=str(ranks))
    processes = [start_process([DEBIAN_PYTHON, str(RANK_PROGRAM), "torch", str(checkpoint),
                                str(out), str(16 << 10), str(missing_on)],
                               env=dict(env, RANK=str(r)), stderr=subprocess.PIPE, text=True)
                 for r in range(ranks)]
    try:
        for p in processes:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
    finally:
        for p in processes:
            stop_process(p)
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(ranks)]


def check_shares(reports, total, row_bytes):
    ranks = len(reports)
    for report in reports:
        assert report.get("error") is None, report
        assert report["identical"], report
        assert report["shards_identical"], report
        assert report["names"] == NAMES
        assert report["rounds"] > 1
        # 1/N of the stored bytes, within a row (and its alignment) at each cut.
        assert abs(report["storage_bytes"] - total / ranks) <= 2 * row_bytes + 64, report
        assert report["storage_bytes"] + report["received_bytes"] == total
    assert sum(r["storage_bytes"] for r in reports) == total
    # Every byte read once more, by the rank that checks it against its own copy.
    assert sum(r["verified_bytes"] for r in reports) == total


def check_same_error(reports):
    errors = [r.get("error") for r in reports]
    assert errors[0] is not None and all(e == errors[0] for e in errors), errors
    assert errors[0]["code"] == "not_found"
    assert "rank 1" in errors[0]["text"] and "model.safetensors.missing" in errors[0]["text"]


@pytest.mark.parametrize("ranks", [2, 3])
def test_mpi_ranks_end_with_the_whole_checkpoint_reading_their_share(checkpoint, tmp_path,
                                                                   ranks):
    path, total, row_bytes = checkpoint
    check_shares(mpi_ranks(ranks, path, tmp_path), total, row_bytes)


def test_a_missing_file_on_one_mpi_rank_raises_the_same_error_on_every_rank(checkpoint,
                                                                           tmp_path):
    check_same_error(mpi_ranks(2, checkpoint[0], tmp_path, missing_on=1))


def test_a_stale_copy_on_one_mpi_rank_raises_the_same_integrity_error_on_every_rank(
        checkpoint, tmp_path):
    # Rank 1's copy: one byte of the last tensor's data changed, the same size.
    path = checkpoint[0]
    stale = bytearray(path.read_bytes())
    stale[-3] ^= 1
    pathlib.Path(str(path) + ".stale").write_bytes(bytes(stale))
    reports = mpi_ranks(2, path, tmp_path, stale_on=1)
    errors = [r.get("error") for r in reports]
    assert errors[0] is not None and all(e == errors[0] for e in errors), errors
    assert errors[0]["type"] == "IntegrityError" and errors[0]["code"] == "integrity"
    assert "rank 1" in errors[0]["text"] and "model.safetensors.stale" in errors[0]["text"]


def test_torch_ranks_end_with_the_whole_checkpoint_reading_their_share(checkpoint, tmp_path):
    path, total, row_bytes = checkpoint
    check_shares(torch_ranks(2, path, tmp_path), total, row_bytes)


def test_a_missing_file_on_one_torch_rank_raises_the_same_error_on_every_rank(checkpoint,
                                                                             tmp_path):
    check_same_error(torch_ranks(2, checkpoint[0], tmp_path, missing_on=1))
