"""Interrupted downloads in the shared Hub cache. huggingface_hub 2.4.0 (the pinned .venv's)
downloads into blobs/<etag>.<8 hex digits>.incomplete, a name of its own per download, never
continues one and leaves it behind when its process is killed; ballast downloads into
blobs/<etag>.incomplete and continues it. `ballast fetch` continues either leftover, fetching
only the rest of the file from the Hub stand-in's CDN (tests/servers/hub_server.py on
127.0.0.1, which counts the bytes it serves), and leaves no .incomplete file; huggingface_hub
ignores ballast's partial file and downloads the file whole, correctly.
"""
import hashlib

import numpy as np
import pytest
from safetensors.numpy import save_file

from conftest import run_cli
from hub_standin import HubStandIn, hub_env, run_hf

REPO = "org/big"
FILE = "model.safetensors"
KEPT = 3 << 20  # bytes of the interrupted download
HEADER_READS = 128 << 10  # what ballast's ranged header parse may fetch before it resumes

DOWNLOAD = """
result = [hf.hf_hub_download(args["repo"], args["file"])]
"""


@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    root = tmp_path_factory.mktemp("repos")
    (root / REPO).mkdir(parents=True)
    rng = np.random.default_rng(27)
    save_file({"w": rng.standard_normal(2 << 20).astype(np.float32)}, str(root / REPO / FILE))
    return root


@pytest.fixture
def hub(repos):
    server = HubStandIn(repos)
    yield server
    server.stop()


def setup_partial(repos, tmp_path, suffix):
    data = (repos / REPO / FILE).read_bytes()
    blobs = tmp_path / "hub" / "models--org--big" / "blobs"
    blobs.mkdir(parents=True)
    blob = blobs / hashlib.sha256(data).hexdigest()
    blob.with_name(blob.name + suffix).write_bytes(data[:KEPT])
    return data, blob


def env_for(hub, tmp_path):
    return hub_env(HF_HOME=tmp_path / "home", HF_HUB_CACHE=tmp_path / "hub",
                   HF_ENDPOINT=hub.endpoint)


def cdn_bytes(hub):
    return hub.stats()["cdn_bytes"].get(f"{REPO}/{FILE}", 0)


@pytest.mark.parametrize("left_by,suffix", [("ballast", ".incomplete"),
                                            ("huggingface_hub", ".0f3a9c1e.incomplete")])
def test_ballast_continues_a_partial_blob(ballast_cli, repos, hub, tmp_path, left_by, suffix):
    data, blob = setup_partial(repos, tmp_path, suffix)
    run_cli(ballast_cli, "fetch", "-q", f"hf://{REPO}/{FILE}", env=env_for(hub, tmp_path))
    assert len(data) - KEPT <= cdn_bytes(hub) <= len(data) - KEPT + HEADER_READS
    assert blob.read_bytes() == data
    assert not [p.name for p in blob.parent.iterdir() if p.name.endswith(".incomplete")]


def test_huggingface_hub_ignores_ballasts_partial_blob(repos, hub, tmp_path):
    data, blob = setup_partial(repos, tmp_path, ".incomplete")
    run_hf(DOWNLOAD, env_for(hub, tmp_path), repo=REPO, file=FILE)
    assert cdn_bytes(hub) == len(data)
    assert blob.read_bytes() == data
