"""The Hub stand-in (tests/servers/hub_server.py) for the Python suite: a started server on
127.0.0.1 with its endpoint, request statistics and stop(), and a runner for the real
huggingface_hub client in a fresh process, so that it reads the environment it is given
(HF_HOME, HF_HUB_CACHE, HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE) as a user's program would.
"""
import json
import os
import subprocess
import sys
import urllib.request

from conftest import DEBIAN_PYTHON, SOURCE_DIR, require, start_process, stop_process

SERVER = SOURCE_DIR / "tests" / "servers" / "hub_server.py"

# Variables that would change where either client looks or sends requests; a test sets the ones
# it means.
_CLEARED = ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN", "HF_TOKEN_PATH",
            "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
            "XDG_CACHE_HOME", "http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY",
            "HTTPS_PROXY", "ALL_PROXY")


class HubStandIn:
    """hub_server.py serving `folder`; stop() ends it (later requests are refused)."""

    def __init__(self, folder):
        require(os.access(DEBIAN_PYTHON, os.X_OK), DEBIAN_PYTHON, "scripts/setup.sh")
        self.process = start_process([DEBIAN_PYTHON, str(SERVER), str(folder)],
                                     stdout=subprocess.PIPE, text=True)
        ports = self.process.stdout.readline().split()
        assert len(ports) == 2, "the Hub stand-in did not start"
        self.port = int(ports[0])
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def stats(self):
        with urllib.request.urlopen(self.endpoint + "/stats", timeout=10) as r:
            return json.load(r)

    def stop(self):
        stop_process(self.process)
        self.process.stdout.close()


def hub_env(**values):
    """os.environ without the Hub and proxy variables, plus `values` (None: left unset)."""
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env["HF_HUB_DISABLE_TELEMETRY"] = "1"
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env.update({k: str(v) for k, v in values.items() if v is not None})
    return env


_PRELUDE = """
import json, sys, warnings
import huggingface_hub as hf
from huggingface_hub import constants
args = json.loads(sys.argv[1])
def fail_name(call):
    try:
        call()
    except Exception as e:
        return type(e).__name__
    return None
"""


def run_hf(program, env, **args):
    """Runs `program` (Python using `hf`, `constants`, `args`, `fail_name`; it sets `result`) with
    the real huggingface_hub in a new process under `env`; returns `result`."""
    code = _PRELUDE + program + "\nprint('\\n' + json.dumps(result))\n"
    out = subprocess.run([sys.executable, "-c", code, json.dumps(args)], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 0, f"huggingface_hub program failed:\n{out.stderr}"
    return json.loads(out.stdout.strip().splitlines()[-1])
