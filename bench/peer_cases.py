"""The peer comparison's cases: ballast and every peer doing the same work on the same bytes,
grouped by work (bench/measure.py reports each row's ratio to the best peer of its work).
Local rows read the page-cached llama checkpoint (one set of tensors in each format); download
and remote rows get the same file from the servers of bench/servers.py. Peers run in the
benchmark's environment (bench/venv.sh) through the drivers in bench/peers/."""
import json
import os
import shutil
import struct

from case import Case
from servers import BUCKET, HUB_FILE, HUB_REPO, KEY
from timing import curl_seconds, json_seconds, wall_seconds

OWNED = "owned load into memory · llama, page-cached"
MAPPED = "mapped view, every page touched · llama, page-cached"
HTTP_DOWNLOAD = "download to a file · nginx"
HUB_DOWNLOAD = "download to a file · Hub stand-in (302 to nginx)"
S3_DOWNLOAD = "download to a file · moto S3, 4 layers"
S3_LOAD = "load into memory · moto S3, 4 layers, no cache"
HTTP_LOAD = "load into memory · nginx, ranged, no cache"
REMOTE_WORKS = (HTTP_DOWNLOAD, HUB_DOWNLOAD, S3_DOWNLOAD, S3_LOAD, HTTP_LOAD)

# Download destinations: tmpfs, emptied before every run, so no run waits on disk writeback.
DOWNLOADS = "/dev/shm/ballast-bench-downloads"

# Peers that cannot run on this CPU-only machine, with the reason (shown in the results).
NOT_RUN = {
    "ServerlessLLM store (serverless-llm-store 0.8.0)":
        "published as an sdist only, and its build cannot finish here: CMake fetches glog from "
        "GitHub (\"fatal: unable to access 'https://github.com/google/glog.git/': Could not "
        "resolve host: github.com\", \"Build step for glog failed: 1\"); on a machine without "
        "a CUDA or ROCm toolkit its CMakeLists.txt stops earlier (\"Neither CUDA nor HIP "
        "found\"), and it pins torch==2.7.0 against the torch 2.15 the other peers use",
    "InstantTensor": "CUDA-only; left to the GPU benchmark",
}


def payload_bytes(safetensors_path):
    """The tensors' bytes (the same in every format): the safetensors data section."""
    with open(safetensors_path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    return sum(e["data_offsets"][1] - e["data_offsets"][0]
               for k, e in header.items() if k != "__metadata__")


def emptied(folder):
    def prepare():
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
    return prepare


def local_cases(ballast, python, cache, root):
    st, binf, npy = f"{cache}/llama.safetensors", f"{cache}/llama.bin", f"{cache}/llama_npy"
    gguf, onnx = f"{cache}/llama.gguf", f"{cache}/llama_onnx/model.onnx"
    tens = f"{cache}/llama.tensors"
    n = payload_bytes(st)
    peer = lambda script, *args: [python, f"{root}/bench/peers/{script}", *args]  # noqa: E731
    bal = lambda path, *args: [ballast, "load", "--json", path, *args]  # noqa: E731
    out = []
    for label, path in (("safetensors", st), (".bin", binf), (".npy files", npy),
                        ("GGUF", gguf), ("ONNX + external data", onnx)):
        out.append(Case(label, f"ballast read t2 ({label})", "ballast", path,
                        bal(path, "--mode", "read", "--threads", "2"), json_seconds, OWNED, n))
    for label, kind, path, cmd in (
            ("safetensors load_file (numpy)", "safetensors", st,
             peer("safetensors_peer.py", "load_file_numpy", st)),
            ("torch.load weights_only, mmap=False", ".bin", binf, peer("torch_load_peer.py", binf)),
            ("numpy.load", ".npy files", npy, peer("numpy_load_peer.py", npy)),
            ("onnx.load, external data", "ONNX + external data", onnx, peer("onnx_peer.py", onnx)),
            ("Run:ai streamer, file to CPU", "safetensors", st, peer("runai_peer.py", st)),
            ("fastsafetensors, CPU (nogds)", "safetensors", st, peer("fastsafetensors_peer.py", st)),
            ("tensorizer (its own format)", "tensorizer", tens, peer("tensorizer_peer.py", tens))):
        out.append(Case(kind, label, "peer", path, cmd, json_seconds, OWNED, n))
    for label, path in (("safetensors", st), (".bin", binf), ("GGUF", gguf)):
        out.append(Case(label, f"ballast mmap, pages touched ({label})", "ballast", path,
                        bal(path, "--mode", "mmap"), json_seconds, MAPPED, n))
    for label, kind, path, cmd in (
            ("safetensors load_file (torch) + touch", "safetensors", st,
             peer("safetensors_peer.py", "load_file_torch", st)),
            ("safe_open + get_tensor (torch) + touch", "safetensors", st,
             peer("safetensors_peer.py", "safe_open_torch", st)),
            ("torch.load weights_only, mmap=True + touch", ".bin", binf,
             peer("torch_load_peer.py", binf, "--mmap")),
            ("gguf GGUFReader + touch", "GGUF", gguf, peer("gguf_peer.py", gguf))):
        out.append(Case(kind, label, "peer", path, cmd, json_seconds, MAPPED, n))
    return out


S3_OBJECT = "llama_4layers.safetensors"  # moto's object (bench/servers.py says why not all)


def remote_cases(ballast, python, cache, root, servers):
    st, s3_object = f"{cache}/llama.safetensors", f"{cache}/{S3_OBJECT}"
    peer = lambda script, *args: [python, f"{root}/bench/peers/{script}", *args]  # noqa: E731
    dest = DOWNLOADS
    fetch = lambda url: [ballast, "fetch", "-q", "--cache-dir", dest, url]  # noqa: E731
    rows = [
        (HTTP_DOWNLOAD, "curl -o", "peer",
         ["curl", "-o", f"{dest}/model.safetensors", servers.http_url], curl_seconds),
        (HTTP_DOWNLOAD, "ballast fetch", "ballast", fetch(servers.http_url), wall_seconds),
        (HUB_DOWNLOAD, "curl -L -o", "peer",
         ["curl", "-L", "-o", f"{dest}/model.safetensors", servers.hub_resolve_url], curl_seconds),
        (HUB_DOWNLOAD, "ballast fetch hf://", "ballast",
         ["env", f"HF_HUB_CACHE={dest}", ballast, "fetch", "-q", servers.hub_url], wall_seconds),
        (HUB_DOWNLOAD, "huggingface_hub hf_hub_download", "peer",
         peer("hf_download_peer.py", HUB_REPO, HUB_FILE, dest),
         json_seconds),
        (S3_DOWNLOAD, "boto3 download_file", "peer",
         peer("boto3_download_peer.py", BUCKET, KEY, f"{dest}/model.safetensors"), json_seconds),
        (S3_DOWNLOAD, "ballast fetch s3://", "ballast", fetch(servers.s3_url), wall_seconds),
        (S3_LOAD, "ballast load --no-cache s3://", "ballast",
         [ballast, "load", "--json", "--no-cache", servers.s3_url], json_seconds),
        (S3_LOAD, "Run:ai streamer, S3 to CPU", "peer", peer("runai_peer.py", servers.s3_url),
         json_seconds),
        (HTTP_LOAD, "ballast load --no-cache http://", "ballast",
         [ballast, "load", "--json", "--no-cache", servers.http_url], json_seconds),
    ]
    out = []
    for work, name, kind, cmd, parse in rows:
        path = s3_object if work in (S3_DOWNLOAD, S3_LOAD) else st
        out.append(Case(work.split(" · ")[1], name, kind, path, cmd, parse, work,
                        os.path.getsize(path), emptied(DOWNLOADS)))
    return out
