"""ballast.Loader's options are checked where they enter (issue 37): a value outside its range
raises InvalidArgumentError naming the option, the value and the range, before any thread is
started; a worker thread the system refuses raises LimitExceededError instead of aborting the
interpreter (a child interpreter whose address space is capped, so that thread stacks run out;
the cap holds only in that child)."""
import os
import subprocess
import sys

import pytest

from conftest import import_ballast

ballast = import_ballast()


@pytest.mark.parametrize("option, value, shown", [
    ("num_threads", 100000, "num_threads must be in [0, 4096] (0: one per core), got 100000"),
    ("num_threads", -1, "got -1"),
    ("max_concurrent_downloads", 0, "max_concurrent_downloads must be in [1, 256], got 0"),
    ("download_retries", 101, "download_retries must be in [0, 100], got 101"),
    ("download_timeout_seconds", float("nan"), "download_timeout_seconds must be in (0, 86400]"),
    ("download_timeout_seconds", -1.0, "got -1"),
    ("read_chunk_bytes", 0, "read_chunk_bytes must be in [4096, 1099511627776], got 0"),
    ("download_chunk_bytes", 1 << 50, "download_chunk_bytes must be in"),
    ("alignment", 3, "alignment must be a power of two in [16, 4096], got 3"),
])
def test_out_of_range_options_raise_invalid_argument(option, value, shown):
    with pytest.raises(ballast.InvalidArgumentError) as raised:
        ballast.Loader(**{option: value})
    assert shown in str(raised.value)


def test_a_refused_thread_start_raises_instead_of_aborting():
    program = """
import resource, sys
sys.path[:0] = sys.argv[1:]
import ballast
# The address space in use now plus 64 MiB: a few 8 MiB thread stacks, not 4096.
with open("/proc/self/statm") as statm:
    in_use = int(statm.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (in_use + (64 << 20), resource.RLIM_INFINITY))
try:
    ballast.Loader(num_threads=4096)
except ballast.Error as e:
    print(type(e).__name__, e)
else:
    print("no error")
"""
    paths = [p for p in [os.environ.get("BALLAST_PYTHONPATH")] if p]
    result = subprocess.run([sys.executable, "-c", program, *paths], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("LimitExceededError "), result.stdout + result.stderr
    assert "the system refused worker thread" in result.stdout
