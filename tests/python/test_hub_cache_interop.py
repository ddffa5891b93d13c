"""ballast and huggingface_hub share one Hub cache: what the real client (hf_hub_download,
snapshot_download) puts in it loads through ballast offline, and what `ballast fetch` or a
cached load puts in it is found by the real client (hf_hub_download(local_files_only=True),
snapshot_download, scan_cache_dir) in the very layout the client writes itself. HF_HOME,
HF_HUB_CACHE, HF_ENDPOINT, HF_TOKEN and HF_HUB_OFFLINE are checked side by side with the client.
Everything runs against the Hub stand-in (tests/servers/hub_server.py) on 127.0.0.1.
"""
import hashlib
import json
import os
import pathlib

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import save_file

from conftest import run_cli
from hub_standin import HubStandIn, hub_env, run_hf

REPO = "org/sharded"
SHARDS = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
INDEX = "model.safetensors.index.json"
WEIGHT_FILES = (INDEX, *SHARDS)
ALL_FILES = ("config.json", *WEIGHT_FILES)  # the whole snapshot, which `ballast fetch` takes
TOKEN = "hf_test_token"  # the one the stand-in accepts for org "gated"


def commit_of(repo, branch="main"):
    """The stand-in's commit for a branch (see hub_server.py)."""
    return hashlib.sha1((repo if branch == "main" else f"{repo}@{branch}").encode()).hexdigest()


def write_repo(folder, shards, config):
    """A sharded safetensors repo: config.json, the index and one file per dict of arrays."""
    folder.mkdir(parents=True)
    weight_map = {}
    for name, tensors in zip(SHARDS, shards):
        save_file(tensors, str(folder / name), metadata={"format": "np"})
        weight_map.update({t: name for t in tensors})
    total = sum(a.nbytes for s in shards for a in s.values())
    (folder / INDEX).write_text(json.dumps({"metadata": {"total_size": total},
                                            "weight_map": weight_map}))
    (folder / "config.json").write_text(json.dumps(config))


@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    """The stand-in's folder: org/sharded at main and at branch dev (shard 1 and the index are
    the same bytes, so their blobs are shared), and gated/model."""
    root = tmp_path_factory.mktemp("repos")
    rng = np.random.default_rng(7)
    first = {"embed.weight": rng.standard_normal((16, 8)).astype(np.float32),
             "layers.0.bias": rng.standard_normal(8).astype(np.float16)}
    second = {"layers.0.weight": rng.integers(-99, 99, (8, 8), dtype=np.int32),
              "head.mask": rng.integers(0, 255, (3, 5), dtype=np.uint8)}
    write_repo(root / REPO, [first, second], {"model_type": "tiny", "hidden_size": 8})
    changed = dict(second, **{"head.mask": second["head.mask"] ^ np.uint8(0xFF)})
    write_repo(root / f"{REPO}@dev", [first, changed], {"model_type": "tiny", "rev": "dev"})
    (root / "gated" / "model").mkdir(parents=True)
    save_file({"w": rng.standard_normal(32).astype(np.float32)},
              str(root / "gated" / "model" / "model.safetensors"))
    return root


@pytest.fixture
def hub(repos):
    server = HubStandIn(repos)
    yield server
    server.stop()


def dtype_name(array):
    return "bool" if array.dtype.kind == "b" else f"{array.dtype.kind}{array.dtype.itemsize * 8}"


def expected(files):
    """{name: {"dtype", "shape", "sha256"}} of every tensor in `files`, as the safetensors
    package reads them (sha256 of the contiguous little-endian bytes)."""
    out = {}
    for file in files:
        with safe_open(str(file), framework="np") as f:
            for name in f.keys():
                a = np.ascontiguousarray(f.get_tensor(name))
                out[name] = {"dtype": dtype_name(a), "shape": list(a.shape),
                             "sha256": hashlib.sha256(a.astype(a.dtype.newbyteorder("<"))
                                                      .tobytes()).hexdigest()}
    return out


def ballast_tensors(cli, source, env):
    """`ballast hash --json` and `ballast inspect --json` of `source`, merged like expected()."""
    hashes = json.loads(run_cli(cli, "hash", "--json", source, env=env).stdout)["tensors"]
    listing = json.loads(run_cli(cli, "inspect", "--json", source, env=env).stdout)["tensors"]
    assert sorted(t["name"] for t in listing) == sorted(hashes)
    for t in listing:
        assert (t["dtype"], t["shape"]) == (hashes[t["name"]]["dtype"], hashes[t["name"]]["shape"])
    return {name: {"dtype": h["dtype"], "shape": h["shape"], "sha256": h["sha256"]}
            for name, h in hashes.items()}


def layout(cache):
    """Every entry of a Hub cache but the lock files: symlinks with their targets, files with
    their sha256, folders."""
    out = {}
    for path in sorted(pathlib.Path(cache).rglob("*")):
        rel = path.relative_to(cache).as_posix()
        if rel.startswith(".locks"):
            continue
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


SCAN = """
with warnings.catch_warnings():
    warnings.simplefilter("error")
    info = hf.scan_cache_dir(args.get("cache"))
result = {
    "warnings": [str(w) for w in info.warnings],
    "incomplete": [str(f.file_path) for f in info.incomplete_files],
    "repos": {r.repo_id: {
        "type": r.repo_type, "nb_files": r.nb_files, "size": r.size_on_disk,
        "revisions": {v.commit_hash: {
            "refs": sorted(v.refs),
            "files": {str(f.file_path.relative_to(v.snapshot_path)): [f.size_on_disk,
                      str(f.blob_path)] for f in v.files}}
            for v in r.revisions}}
        for r in info.repos},
}
"""

DOWNLOAD = """
result = [hf.hf_hub_download(args["repo"], f, revision=args.get("revision"),
                             local_files_only=args.get("local", False))
          for f in args["files"]]
"""

SNAPSHOT = """
result = hf.snapshot_download(args["repo"], revision=args.get("revision"),
                              local_files_only=args.get("local", False))
"""


def hf_download(env, files, repo=REPO, revision=None, local=False):
    return run_hf(DOWNLOAD, env, repo=repo, files=list(files), revision=revision, local=local)


# huggingface_hub -> ballast


def test_snapshot_download_loads_offline_in_ballast(ballast_cli, repos, hub, tmp_path):
    env = hub_env(HF_HOME=tmp_path / "home", HF_HUB_CACHE=tmp_path / "cache",
                  HF_ENDPOINT=hub.endpoint)
    snapshot = run_hf(SNAPSHOT, env, repo=REPO)
    commit = commit_of(REPO)
    assert snapshot == str(tmp_path / "cache" / f"models--org--sharded/snapshots/{commit}")
    hub.stop()  # nothing can be fetched from here on
    offline = dict(env, HF_HUB_OFFLINE="1")
    before = layout(tmp_path / "cache")
    want = expected(repos / REPO / s for s in SHARDS)
    for source in (f"hf://{REPO}", f"hf://{REPO}@main", f"hf://{REPO}@{commit}",
                   f"hf://{REPO}/{INDEX}", f"hf://{REPO}@{commit}/{INDEX}"):
        assert ballast_tensors(ballast_cli, source, offline) == want, source
    for rev in ("", "@main", f"@{commit}"):
        source = f"hf://{REPO}{rev}/{SHARDS[1]}"
        assert ballast_tensors(ballast_cli, source, offline) == expected([repos / REPO / SHARDS[1]])
    assert layout(tmp_path / "cache") == before, "an offline load changed the cache"


def test_hf_hub_download_loads_offline_in_ballast(ballast_cli, repos, hub, tmp_path):
    env = hub_env(HF_HOME=tmp_path / "home", HF_ENDPOINT=hub.endpoint)
    commit = commit_of(REPO)
    paths = hf_download(env, [SHARDS[0]])
    snapshot = tmp_path / "home" / "hub" / "models--org--sharded" / "snapshots" / commit
    assert paths == [str(snapshot / SHARDS[0])]
    hub.stop()
    offline = dict(env, HF_HUB_OFFLINE="1")
    want = expected([repos / REPO / SHARDS[0]])
    for rev in ("", "@main", f"@{commit}"):
        assert ballast_tensors(ballast_cli, f"hf://{REPO}{rev}/{SHARDS[0]}", offline) == want
    # The index was not downloaded: the whole repo is not cached, and ballast says so.
    failed = run_cli(ballast_cli, "inspect", f"hf://{REPO}", env=offline, check=False)
    assert failed.returncode != 0
    assert "HF_HUB_OFFLINE" in failed.stderr and "not cached" in failed.stderr, failed.stderr


# ballast -> huggingface_hub


def test_ballast_fetch_is_found_by_huggingface_hub(ballast_cli, repos, hub, tmp_path):
    env = hub_env(HF_HOME=tmp_path / "home", HF_HUB_CACHE=tmp_path / "ballast",
                  HF_ENDPOINT=hub.endpoint)
    fetched = run_cli(ballast_cli, "fetch", f"hf://{REPO}", env=env)
    commit = commit_of(REPO)
    snapshot = tmp_path / "ballast" / "models--org--sharded" / "snapshots" / commit
    assert fetched.stdout.startswith(f"fetched hf://{REPO} (commit {commit}): 4 files")
    assert fetched.stdout.splitlines()[-1] == str(snapshot)
    # The same files downloaded by huggingface_hub itself into another cache: the same layout,
    # entry for entry (blobs named by sha256 or git etag, relative symlinks, refs, CACHEDIR.TAG).
    reference = dict(env, HF_HUB_CACHE=str(tmp_path / "reference"))
    hf_download(reference, ALL_FILES)
    assert layout(tmp_path / "ballast") == layout(tmp_path / "reference")

    hub.stop()
    offline = dict(env, HF_HUB_OFFLINE="1")
    for revision in (None, "main", commit):
        paths = hf_download(offline, WEIGHT_FILES, revision=revision, local=True)
        assert paths == [str(snapshot / f) for f in WEIGHT_FILES]
        for path, file in zip(paths, WEIGHT_FILES):
            assert pathlib.Path(path).read_bytes() == (repos / REPO / file).read_bytes()
    assert run_hf(SNAPSHOT, offline, repo=REPO, local=True) == str(snapshot)
    repo_folder = tmp_path / "ballast" / "models--org--sharded"
    assert (repo_folder / "refs" / "main").read_text() == commit
    for file in WEIGHT_FILES:
        data = (repos / REPO / file).read_bytes()
        blob = (hashlib.sha256(data).hexdigest() if file.endswith(".safetensors") else
                hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest())
        assert os.readlink(snapshot / file) == f"../../blobs/{blob}"

    scan = run_hf(SCAN, offline)
    assert scan["warnings"] == [] and scan["incomplete"] == []
    sizes = {f: (repos / REPO / f).stat().st_size for f in ALL_FILES}
    repo = scan["repos"][REPO]
    assert (repo["type"], repo["nb_files"], repo["size"]) == ("model", 4, sum(sizes.values()))
    assert list(repo["revisions"]) == [commit]
    revision = repo["revisions"][commit]
    assert revision["refs"] == ["main"]
    assert {f: v[0] for f, v in revision["files"].items()} == sizes


def test_ballast_cached_load_is_found_by_huggingface_hub(ballast_cli, repos, hub, tmp_path):
    env = hub_env(HF_HOME=tmp_path / "home", HF_ENDPOINT=hub.endpoint)
    commit = commit_of(REPO)
    source = f"hf://{REPO}@{commit}/{SHARDS[1]}"
    assert ballast_tensors(ballast_cli, source, env) == expected([repos / REPO / SHARDS[1]])
    hub.stop()
    offline = dict(env, HF_HUB_OFFLINE="1")
    [path] = hf_download(offline, [SHARDS[1]], revision=commit, local=True)
    assert pathlib.Path(path).read_bytes() == (repos / REPO / SHARDS[1]).read_bytes()
    scan = run_hf(SCAN, offline)
    assert scan["warnings"] == []
    # A commit names itself: like huggingface_hub, ballast records no ref for it.
    assert scan["repos"][REPO]["revisions"][commit]["refs"] == []
    assert not (tmp_path / "home/hub/models--org--sharded/refs/main").exists()


# Revisions


def test_revisions_share_blobs_both_ways(ballast_cli, repos, hub, tmp_path):
    main, dev = commit_of(REPO), commit_of(REPO, "dev")
    ballast_env = hub_env(HF_HOME=tmp_path / "b", HF_ENDPOINT=hub.endpoint)
    hf_env = hub_env(HF_HOME=tmp_path / "h", HF_ENDPOINT=hub.endpoint)
    for rev in ("", "@dev", f"@{dev}"):
        run_cli(ballast_cli, "fetch", "-q", f"hf://{REPO}{rev}", env=ballast_env)
    for revision in ("main", "dev"):
        hf_download(hf_env, ALL_FILES, revision=revision)
    assert layout(tmp_path / "b" / "hub") == layout(tmp_path / "h" / "hub")
    gets = hub.stats()["cdn_gets"]
    # Shard 1 is the same bytes in both revisions: each client downloaded it once.
    assert gets[f"{REPO}/{SHARDS[0]}"] == 2 and f"{REPO}@dev/{SHARDS[0]}" not in gets
    hub.stop()

    for env in (ballast_env, hf_env):
        offline = dict(env, HF_HUB_OFFLINE="1")
        scan = run_hf(SCAN, offline)
        assert scan["warnings"] == []
        repo = scan["repos"][REPO]
        assert {c: v["refs"] for c, v in repo["revisions"].items()} == {main: ["main"],
                                                                        dev: ["dev"]}
        assert repo["nb_files"] == 6  # index and shard 1 shared, shard 2 and config twice
        blobs = {c: {f: b for f, (_, b) in v["files"].items()}
                 for c, v in repo["revisions"].items()}
        assert blobs[main][SHARDS[0]] == blobs[dev][SHARDS[0]]
        assert blobs[main][SHARDS[1]] != blobs[dev][SHARDS[1]]
        [path] = hf_download(offline, [SHARDS[1]], revision="dev", local=True)
        assert pathlib.Path(path).read_bytes() == (repos / f"{REPO}@dev" / SHARDS[1]).read_bytes()
        for rev, folder in (("@dev", f"{REPO}@dev"), (f"@{dev}", f"{REPO}@dev"),
                            ("@main", REPO), (f"@{main}", REPO)):
            assert ballast_tensors(ballast_cli, f"hf://{REPO}{rev}", offline) == \
                expected(repos / folder / s for s in SHARDS), rev


# The environment, side by side with huggingface_hub


WHERE = """
result = {"cache": constants.HF_HUB_CACHE, "offline": constants.HF_HUB_OFFLINE,
          "endpoint": constants.ENDPOINT,
          "file": hf.hf_hub_download(args["repo"], args["file"]) if args.get("file") else None}
"""


def repo_folders(cache):
    return sorted(p.name for p in pathlib.Path(cache).glob("models--*"))


@pytest.mark.parametrize("case", ["hf_home", "hf_hub_cache", "legacy", "xdg", "home", "tilde",
                                  "vars"])
def test_cache_location_variables(ballast_cli, hub, tmp_path, case):
    home = tmp_path / "user"
    base = {"HOME": home, "HF_ENDPOINT": hub.endpoint}
    env, cache = {
        "hf_home": ({"HF_HOME": tmp_path / "hf"}, tmp_path / "hf" / "hub"),
        "hf_hub_cache": ({"HF_HOME": tmp_path / "hf", "HF_HUB_CACHE": tmp_path / "c"},
                         tmp_path / "c"),
        "home": ({}, home / ".cache" / "huggingface" / "hub"),
        "legacy": ({"HF_HOME": tmp_path / "hf", "HUGGINGFACE_HUB_CACHE": tmp_path / "old"},
                   tmp_path / "old"),
        "xdg": ({"XDG_CACHE_HOME": tmp_path / "x"}, tmp_path / "x" / "huggingface" / "hub"),
        "tilde": ({"HF_HOME": "~/hf-tilde"}, home / "hf-tilde" / "hub"),
        "vars": ({"ROOT": tmp_path, "ROOT_NAME": "r",
                  "HF_HUB_CACHE": "${ROOT}/v/$ROOT_NAME/$UNSET_VAR"},
                 tmp_path / "v" / "r" / "$UNSET_VAR"),
    }[case]
    env = hub_env(**base, **env)
    seen = run_hf(WHERE, env, repo=REPO, file="config.json")
    assert seen["cache"] == str(cache)
    assert seen["file"].startswith(str(cache) + "/")
    run_cli(ballast_cli, "fetch", "-q", f"hf://{REPO}/{SHARDS[0]}", env=env)
    snapshot = cache / "models--org--sharded" / "snapshots" / commit_of(REPO)
    assert sorted(p.name for p in snapshot.iterdir()) == ["config.json", SHARDS[0]]
    repos_made = [p for p in tmp_path.rglob("models--*") if p.parent.name != ".locks"]
    assert repos_made == [cache / "models--org--sharded"], repos_made


def test_hf_endpoint(ballast_cli, repos, hub, tmp_path):
    # A trailing slash is dropped by both.
    env = hub_env(HF_HOME=tmp_path / "hf", HF_ENDPOINT=hub.endpoint + "/")
    assert run_hf(WHERE, env)["endpoint"] == hub.endpoint
    hf_download(env, [SHARDS[0]])
    run_cli(ballast_cli, "fetch", "-q", f"hf://{REPO}/{SHARDS[1]}", env=env)
    requests = hub.stats()["hub_requests"]
    for file in SHARDS:
        assert f"HEAD /{REPO}/resolve/main/{file}" in requests
    # An endpoint that nobody serves: both fail, and nothing new is cached.
    hub.stop()
    dead = dict(env, HF_ENDPOINT=hub.endpoint, HF_HUB_CACHE=str(tmp_path / "dead"))
    assert run_hf("result = fail_name(lambda: hf.hf_hub_download(args['repo'], 'config.json'))",
                  dead, repo=REPO) is not None
    failed = run_cli(ballast_cli, "fetch", "-q", f"hf://{REPO}/config.json", env=dead, check=False)
    assert failed.returncode != 0
    assert repo_folders(tmp_path / "dead") == []


UNREACHABLE = """
result = {f: fail_name(lambda: hf.hf_hub_download(args["repo"], f)) for f in args["files"]}
"""


def test_unreachable_hub_uses_the_cache(ballast_cli, repos, hub, tmp_path):
    # Not offline, but the Hub does not answer: both use what the cache holds for the branch,
    # and fail for what it does not hold.
    env = hub_env(HF_HOME=tmp_path / "hf", HF_ENDPOINT=hub.endpoint)
    hf_download(env, WEIGHT_FILES)
    hub.stop()
    seen = run_hf(UNREACHABLE, env, repo=REPO, files=[SHARDS[0], "config.json"])
    assert seen == {SHARDS[0]: None, "config.json": "LocalEntryNotFoundError"}
    assert ballast_tensors(ballast_cli, f"hf://{REPO}", env) == \
        expected(repos / REPO / s for s in SHARDS)
    failed = run_cli(ballast_cli, "hash", f"hf://{REPO}/config.json", env=env, check=False)
    assert failed.returncode != 0 and "request failed" in failed.stderr, failed.stderr


GATED = """
result = fail_name(lambda: hf.hf_hub_download("gated/model", "model.safetensors"))
"""


def test_hf_token_for_a_gated_repo(ballast_cli, repos, hub, tmp_path):
    source = "hf://gated/model/model.safetensors"
    want = expected([repos / "gated" / "model" / "model.safetensors"])
    # No token: both are refused (401) and cache nothing.
    env = hub_env(HF_HOME=tmp_path / "none", HF_ENDPOINT=hub.endpoint)
    assert run_hf(GATED, env) == "GatedRepoError"
    failed = run_cli(ballast_cli, "hash", source, env=env, check=False)
    assert failed.returncode != 0 and "401" in failed.stderr, failed.stderr
    assert not (tmp_path / "none" / "hub" / "models--gated--model" / "blobs").exists()
    # HF_TOKEN, the token file in HF_HOME, and HF_TOKEN_PATH: both get in.
    (tmp_path / "file").mkdir()
    (tmp_path / "file" / "token").write_text(f"  {TOKEN}\r\n")
    (tmp_path / "elsewhere").write_text(TOKEN)
    for name, values in (("env", {"HF_TOKEN": TOKEN}),
                         ("legacy", {"HUGGING_FACE_HUB_TOKEN": TOKEN}), ("file", {}),
                         ("path", {"HF_TOKEN_PATH": tmp_path / "elsewhere"})):
        env = hub_env(HF_HOME=tmp_path / name, HF_ENDPOINT=hub.endpoint, **values)
        assert run_hf(GATED, env) is None, name
        assert ballast_tensors(ballast_cli, source, env) == want, name
    assert all(auth == "" for auth in hub.stats()["cdn_auth"]), "the token reached the CDN"


OFFLINE = """
result = {"offline": constants.HF_HUB_OFFLINE,
          "error": fail_name(lambda: hf.hf_hub_download(args["repo"], args["file"]))}
"""


@pytest.mark.parametrize("variable,value", [("HF_HUB_OFFLINE", "1"), ("HF_HUB_OFFLINE", "true"),
                                            ("HF_HUB_OFFLINE", "YES"), ("HF_HUB_OFFLINE", "On"),
                                            ("TRANSFORMERS_OFFLINE", "1")])
def test_hf_hub_offline(ballast_cli, repos, hub, tmp_path, variable, value):
    env = hub_env(HF_HOME=tmp_path / "hf", HF_ENDPOINT=hub.endpoint, **{variable: value})
    # Nothing cached: both fail without a single request to the Hub, and say why.
    seen = run_hf(OFFLINE, env, repo=REPO, file=SHARDS[0])
    assert seen == {"offline": True, "error": "LocalEntryNotFoundError"}
    for source in (f"hf://{REPO}/{SHARDS[0]}", f"hf://{REPO}"):
        failed = run_cli(ballast_cli, "hash", source, env=env, check=False)
        assert failed.returncode != 0
        assert "HF_HUB_OFFLINE" in failed.stderr and "not cached" in failed.stderr, failed.stderr
    assert [r for r in hub.stats()["hub_requests"] if "/org/" in r] == []
    # Once cached (online), both read it offline without a request.
    online = hub_env(HF_HOME=tmp_path / "hf", HF_ENDPOINT=hub.endpoint)
    hf_download(online, [SHARDS[0]])
    before = len(hub.stats()["hub_requests"])
    assert run_hf(OFFLINE, env, repo=REPO, file=SHARDS[0])["error"] is None
    assert ballast_tensors(ballast_cli, f"hf://{REPO}/{SHARDS[0]}", env) == \
        expected([repos / REPO / SHARDS[0]])
    assert len(hub.stats()["hub_requests"]) == before


@pytest.mark.parametrize("value", ["0", "false", "no", ""])
def test_hf_hub_offline_off(ballast_cli, repos, hub, tmp_path, value):
    env = hub_env(HF_HOME=tmp_path / "hf", HF_ENDPOINT=hub.endpoint, HF_HUB_OFFLINE=value)
    assert run_hf(OFFLINE, env, repo=REPO, file=SHARDS[0]) == {"offline": False, "error": None}
    assert ballast_tensors(ballast_cli, f"hf://{REPO}/{SHARDS[1]}", env) == \
        expected([repos / REPO / SHARDS[1]])
