"""`ballast fetch hf://...` next to the real `hf download` (huggingface_hub 2.4.0, the pinned
.venv) against the Hub stand-in (tests/servers/hub_server.py on 127.0.0.1): the same snapshot
with the same --include / --exclude patterns, the same cache entries, the same path on the last
line of stdout, --cache-dir as the Hub cache, a repo id without an organisation; what ballast
fetched is found by snapshot_download(local_files_only=True); and the token file that
`hf auth login` writes (at $HF_HOME/token or HF_TOKEN_PATH) is the token ballast sends, with
huggingface_hub's precedence (HF_TOKEN first).
"""
import hashlib
import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import run_cli
from hub_standin import HubStandIn, hub_env, run_hf

REPO = "org/model"
FILES = {"config.json": '{"model_type": "tiny"}', "tokenizer.json": '{"version": "1.0"}',
         "tokenizer_config.json": "{}", "tokenizer.model": "\x0a\x05hello",
         "docs/notes.txt": "notes\n", ".gitattributes": "*.safetensors filter=lfs\n"}
TOKEN = "hf_test_token"  # the one the stand-in accepts


def safetensors_bytes(name, payload):
    header = json.dumps({name: {"dtype": "U8", "shape": [len(payload)],
                                "data_offsets": [0, len(payload)]}}).encode()
    header += b" " * (-len(header) % 8)
    return len(header).to_bytes(8, "little") + header + payload


@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    root = tmp_path_factory.mktemp("repos")
    for repo in (REPO, "_/gpt2", "gated/model"):
        folder = root / repo
        for name, text in FILES.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
        (folder / "model-00001-of-00002.safetensors").write_bytes(
            safetensors_bytes("a", b"A" * 64))
        (folder / "model-00002-of-00002.safetensors").write_bytes(
            safetensors_bytes("b", b"B" * 32))
    return root


@pytest.fixture(scope="module")
def hub(repos):
    server = HubStandIn(repos)
    yield server
    server.stop()


def commit_of(repo):
    return hashlib.sha1(repo.encode()).hexdigest()


def files_in(snapshot):
    snapshot = pathlib.Path(snapshot)
    return sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_file())


def layout(cache):
    """Every cache entry but locks and huggingface_hub's own trees/<commit>.json listing (which
    ballast does not write: docs/remote.md), symlinks with their targets, files hashed."""
    out = {}
    for path in sorted(pathlib.Path(cache).rglob("*")):
        rel = path.relative_to(cache).as_posix()
        if rel.startswith(".locks") or "/trees" in rel:
            continue
        out[rel] = ("-> " + os.readlink(path) if path.is_symlink() else
                    "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def hf_cli(*args, env):
    """The real `hf` command of the virtual environment; returns its stdout lines (with
    --quiet, `hf download` prints only the local path, as `ballast fetch -q`)."""
    hf = pathlib.Path(sys.executable).parent / "hf"
    out = subprocess.run([str(hf), *map(str, args)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, f"hf {' '.join(map(str, args))} failed:\n{out.stderr}"
    return out.stdout.splitlines()


PATTERNS = [
    ([], []),
    (["*.json"], []),
    (["*.json"], ["tokenizer*"]),
    ([], ["*.safetensors", ".*"]),
    (["docs/"], []),
    (["*00001*", "tokenizer.*"], ["*.json"]),
]


@pytest.mark.parametrize("include,exclude", PATTERNS)
def test_fetch_is_hf_download(ballast_cli, hub, tmp_path, include, exclude):
    env = hub_env(HF_HOME=tmp_path / "home", HF_ENDPOINT=hub.endpoint)
    flags = [f"--include={p}" for p in include] + [f"--exclude={p}" for p in exclude]
    ours = run_cli(ballast_cli, "fetch", "--cache-dir", tmp_path / "b", *flags, f"hf://{REPO}",
                   env=env).stdout.splitlines()
    theirs = hf_cli("download", "--quiet", REPO, "--cache-dir", tmp_path / "h", *flags, env=env)
    snapshot = f"models--org--model/snapshots/{commit_of(REPO)}"
    assert ours[-1] == str(tmp_path / "b" / snapshot)
    assert theirs[-1] == str(tmp_path / "h" / snapshot)
    assert files_in(ours[-1]) == files_in(theirs[-1]) != []
    assert layout(tmp_path / "b") == layout(tmp_path / "h")
    assert not (tmp_path / "home" / "hub").exists(), "--cache-dir was not the Hub cache"
    # huggingface_hub finds ballast's snapshot without the Hub.
    offline = dict(env, HF_HUB_OFFLINE="1")
    found = run_hf("result = hf.snapshot_download(args['repo'], cache_dir=args['cache'], "
                   "allow_patterns=args['include'] or None, ignore_patterns=args['exclude'] or "
                   "None, local_files_only=True)", offline, repo=REPO, cache=str(tmp_path / "b"),
                   include=include, exclude=exclude)
    assert found == ours[-1]


def test_a_repo_without_an_organisation(ballast_cli, hub, tmp_path):
    env = hub_env(HF_HOME=tmp_path / "home", HF_ENDPOINT=hub.endpoint)
    ours = run_cli(ballast_cli, "fetch", "-q", "--cache-dir", tmp_path / "b", "hf://gpt2",
                   env=env).stdout
    theirs = hf_cli("download", "--quiet", "gpt2", "--cache-dir", tmp_path / "h", env=env)
    assert ours == str(tmp_path / "b" / "models--gpt2" / "snapshots" / commit_of("gpt2")) + "\n"
    assert layout(tmp_path / "b") == layout(tmp_path / "h")
    assert theirs[-1] == ours.strip().replace(str(tmp_path / "b"), str(tmp_path / "h"))


def test_the_token_file_hf_auth_login_writes(ballast_cli, hub, tmp_path):
    source = "hf://gated/model/model-00001-of-00002.safetensors"
    for name, values, token_file in (
            ("home", {}, tmp_path / "home" / "token"),
            ("path", {"HF_TOKEN_PATH": tmp_path / "elsewhere" / "tok"},
             tmp_path / "elsewhere" / "tok")):
        env = hub_env(HF_HOME=tmp_path / "home" if name == "home" else tmp_path / name,
                      HF_ENDPOINT=hub.endpoint, **values)
        failed = run_cli(ballast_cli, "hash", source, env=env, check=False)
        assert failed.returncode == 1 and "hf auth login" in failed.stderr, failed.stderr
        hf_cli("auth", "login", "--token", TOKEN, env=env)
        assert token_file.read_text().strip() == TOKEN, name
        run_cli(ballast_cli, "hash", source, env=env)
        # HF_TOKEN comes first, as in huggingface_hub: a wrong one is refused even with the
        # file (for a file not cached yet: a cached one is used when the Hub refuses, by both).
        wrong = dict(env, HF_TOKEN="hf_wrong_secret")
        assert run_hf("result = fail_name(lambda: hf.hf_hub_download('gated/model', "
                      "'config.json'))", wrong) == "GatedRepoError"
        failed = run_cli(ballast_cli, "hash", source.replace("00001-of", "00002-of"), env=wrong,
                         check=False)
        assert failed.returncode == 1 and "gated repository" in failed.stderr, failed.stderr
        assert "hf_wrong_secret" not in failed.stderr + failed.stdout
