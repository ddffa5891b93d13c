"""Servers the Python suite starts (conftest.start_process) die with their test: a test process
that aborts while it holds the Hub stand-in leaves no process of the server's group behind and
none holding the test's output pipe, which ctest would otherwise wait on."""
import os
import pathlib
import signal
import subprocess
import sys
import time

from conftest import DEBIAN_PYTHON, require

HERE = pathlib.Path(__file__).resolve().parent

HOLDER = """
import os, subprocess, sys
sys.path.insert(0, sys.argv[1])
from conftest import DEBIAN_PYTHON, start_process
from hub_standin import SERVER
server = start_process([DEBIAN_PYTHON, str(SERVER), sys.argv[2]], stdout=subprocess.PIPE,
                       text=True)
server.stdout.readline()  # its ports: it is serving
print(server.pid, flush=True)
os.abort()
"""


def live_members(group):
    """The live (not zombie) processes of process group `group`, its leader included."""
    out = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it ended meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # state ppid pgrp ...
        if group in (int(entry.name), int(fields[2])) and fields[0] != "Z":
            out.append(stat[:stat.rindex(")") + 1])
    return out


def test_a_crashed_test_process_leaves_no_server_behind(tmp_path):
    require(os.access(DEBIAN_PYTHON, os.X_OK), DEBIAN_PYTHON, "scripts/setup.sh")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(HERE), str(tmp_path)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        # The output ends once the holder died: no server of its holds the pipe.
        out, _ = holder.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        holder.kill()
        raise AssertionError("the server still holds the crashed test's output pipe")
    assert holder.returncode < 0, out  # it aborted
    server = int(out.split()[0])
    left = live_members(server)
    for _ in range(200):
        if not left:
            break
        time.sleep(0.05)
        left = live_members(server)
    if left:
        os.kill(server, signal.SIGKILL)
    assert not left, f"the server outlived the crashed test: {left}"
