"""Shared fixtures for ballast's Python test suite (run by ctest, one ctest test per file).

The suite runs in the project's virtual environment (.venv, made by scripts/setup.sh from the
pinned requirements/test.txt). It drives the built `ballast` CLI ($BALLAST_CLI, set by ctest)
and compares it with the reference Python packages. A component that is missing fails the test
when CI is set and skips it, naming what is missing and how to install it, otherwise.
"""
import ctypes
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile

import pytest

SOURCE_DIR = pathlib.Path(__file__).resolve().parents[2]
DEBIAN_PYTHON = "/usr/bin/python3"


def require(available, what, how):
    """Fails (CI) or skips (elsewhere) the calling test when `available` is false."""
    if available:
        return
    message = f"{what} is missing ({how})"
    if os.environ.get("CI"):
        pytest.fail(f"{message}; CI needs it")
    pytest.skip(message)


@pytest.fixture(scope="session")
def ballast_cli():
    path = os.environ.get("BALLAST_CLI") or shutil.which("ballast")
    require(path and os.access(path, os.X_OK), "the ballast CLI",
            "build it and run through ctest, or set BALLAST_CLI")
    return path


@pytest.fixture(scope="session")
def golden_dir():
    path = pathlib.Path(os.environ.get("BALLAST_GOLDEN_DIR", SOURCE_DIR.parent / "shared" / "golden"))
    if not (path / "manifest.json").exists():
        pytest.skip("../shared/golden is absent; golden-corpus test skipped")
    return path


def start_process(argv, **popen_args):
    """Starts a server or helper process that dies with this test process: it leads a process
    group of its own (stop_process ends the whole group) and gets SIGKILL when pytest dies
    (PR_SET_PDEATHSIG), and it holds none of pytest's output (stdin, stdout and stderr are
    /dev/null unless `popen_args` says otherwise), which ctest would wait on."""
    parent = os.getpid()

    def die_with_parent():
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # pytest died before the line above
            os._exit(1)

    for stream in ("stdin", "stdout", "stderr"):
        popen_args.setdefault(stream, subprocess.DEVNULL)
    return subprocess.Popen(argv, start_new_session=True, preexec_fn=die_with_parent,
                            **popen_args)


def stop_process(process, timeout=10):
    """Ends `process` and every process of its group (SIGTERM, then SIGKILL), and waits."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if process.returncode is not None:  # reaped: its group id may be another's by now
            return
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            continue
    process.wait()


def run_cli(cli, *args, env=None, check=True, timeout=300, cwd=None):
    """Runs the ballast CLI; returns the CompletedProcess (text). Fails on a non-zero exit
    when `check`, showing stderr. It runs in the temporary folder unless `cwd` says
    otherwise, so that nothing it writes by mistake lands in the source tree."""
    result = subprocess.run([cli, *map(str, args)], capture_output=True, text=True,
                            env=env, timeout=timeout, cwd=cwd or tempfile.gettempdir())
    if check and result.returncode != 0:
        pytest.fail(f"ballast {' '.join(map(str, args))} exited {result.returncode}:\n"
                    f"{result.stderr}")
    return result


def run_debian_python(program, *args, timeout=300):
    """Runs Python source with Debian's /usr/bin/python3 (torch 1.13, numpy, onnx); returns
    stdout. Fails the test on a non-zero exit."""
    require(os.access(DEBIAN_PYTHON, os.X_OK), DEBIAN_PYTHON, "scripts/setup.sh")
    # -I: only Debian's own packages, never the virtual environment's (numpy 2 would break torch).
    result = subprocess.run([DEBIAN_PYTHON, "-I", "-c", program, *map(str, args)],
                            capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        pytest.fail(f"{DEBIAN_PYTHON} failed:\n{result.stderr}")
    return result.stdout


def import_ballast():
    """The ballast Python package: the development build named by $BALLAST_PYTHONPATH (ctest
    sets it for a tree configured with -DBALLAST_PYTHON=ON), else the one `pip install .`
    put into the virtual environment. Fails (CI) or skips (elsewhere) when there is none."""
    import importlib
    import sys

    extra = os.environ.get("BALLAST_PYTHONPATH")
    if extra and extra not in sys.path:
        sys.path.insert(0, extra)
    try:
        return importlib.import_module("ballast")
    except ImportError as e:
        require(False, f"the ballast Python package ({e})",
                "pip install . into .venv, or build with -DBALLAST_PYTHON=ON and run via ctest")


def package_path(*modules):
    """A temporary folder holding links to the given imported packages (and nothing else of
    their site-packages), for PYTHONPATH of Debian's interpreter."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix="ballast-pkgs-"))
    for module in modules:
        source = pathlib.Path(module.__file__).parent
        (folder / module.__name__.split(".")[0]).symlink_to(source)
    return folder
