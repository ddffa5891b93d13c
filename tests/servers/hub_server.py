#!/usr/bin/python3
"""A Hugging Face Hub stand-in for ballast's tests, bound to 127.0.0.1 only.

Usage: hub_server.py FOLDER. FOLDER/<org>/<name>/<path> are the files of branch "main" of repo
<org>/<name>; FOLDER/<org>/<name>@<branch>/<path> those of another branch. Prints
"PORT CDN_PORT". Like the Hub (and as huggingface_hub's hf_hub_download and snapshot_download
expect), HEAD/GET {org}/{name}/resolve/{revision}/{path} answers with X-Repo-Commit; LFS files
(everything but *.json and *.md) get ETag/X-Linked-Etag = their sha256, X-Linked-Size and a
302 to the CDN port, which serves them with Range support; other files are served directly
with ETag = their git blob sha1. No Xet headers are ever sent (clients then use plain HTTP).
GET /api/models/{org}/{name}[/revision/{revision}] answers {"id", "sha", "siblings"} and
GET /api/models/{org}/{name}/tree/{revision} the file list ("path", "size", "oid", "lfs").
A revision is a branch name or a branch's commit (sha1 of the repo id for main, of
"<org>/<name>@<branch>" otherwise). Errors carry X-Error-Code as the Hub's do (RepoNotFound,
RevisionNotFound, EntryNotFound, GatedRepo). Repos of org "gated" answer 401 without
"Authorization: Bearer hf_test_token"; repos of org "private" answer it as the Hub answers for a
private repo (401, RepoNotFound, X-Error-Message). Repos without an organisation ("gpt2") are
FOLDER/_/<name>. GET /api/whoami-v2 answers the test token's user (what `hf auth login`
checks). Repo "org/corrupt" states a wrong sha256; repos named "moving" list their files at
one commit and answer for each file with X-Repo-Commit of another (a branch moved between). GET /stats:
CDN GETs and body bytes served per file, the Authorization headers the CDN saw, and every Hub request.
With HUB_CDN_URL set, LFS redirects go to {HUB_CDN_URL}/<folder>/<path> instead (the
benchmark's nginx serving the same folder). Each LFS file's sha256 is computed once per
(size, mtime).
"""
import functools
import hashlib
import json
import os
import re
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FOLDER = sys.argv[1]
CDN_URL = os.environ.get("HUB_CDN_URL")
LOCK = threading.Lock()
CDN_GETS = {}
CDN_BYTES = {}
CDN_AUTH = []
HUB_REQUESTS = []


def commit_of(repo, branch="main"):
    return hashlib.sha1((repo if branch == "main" else f"{repo}@{branch}").encode()).hexdigest()


def lfs(path):
    return not (path.endswith(".json") or path.endswith(".md"))


@functools.lru_cache(maxsize=None)
def sha256_of(path, size, mtime_ns):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def lfs_sha256(path):
    st = os.stat(path)
    return sha256_of(path, st.st_size, st.st_mtime_ns)


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def branches(org, name):
    """{branch: folder} of a repo (empty when the repo does not exist)."""
    found = {}
    if os.path.isdir(os.path.join(FOLDER, org, name)):
        found["main"] = f"{org}/{name}"
    org_folder = os.path.join(FOLDER, org)
    if os.path.isdir(org_folder):
        for entry in os.listdir(org_folder):
            if entry.startswith(name + "@"):
                found[entry[len(name) + 1:]] = f"{org}/{entry}"
    return found


def files_of(folder):
    root = os.path.join(FOLDER, folder)
    out = []
    for here, _, names in os.walk(root):
        for n in names:
            out.append(os.path.relpath(os.path.join(here, n), root).replace(os.sep, "/"))
    return sorted(out)


class Base(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, headers, body=b"", head=False):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if body and not head:
            self.wfile.write(body)

    def send_json(self, value, head):
        body = json.dumps(value).encode()
        self.send(200, {"Content-Type": "application/json", "Content-Length": str(len(body))},
                  body, head)

    def error(self, status, code):
        self.send(status, {"X-Error-Code": code, "Content-Length": "0"})

    def serve_bytes(self, data, headers, head):
        match = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        headers["Accept-Ranges"] = "bytes"
        if match and not head:
            first, last = int(match.group(1)), min(int(match.group(2)), len(data) - 1)
            body = data[first:last + 1]
            headers["Content-Range"] = f"bytes {first}-{last}/{len(data)}"
            headers["Content-Length"] = str(len(body))
            self.send(206, headers, body)
            return len(body)
        headers["Content-Length"] = str(len(data))
        self.send(200, headers, data, head)
        return 0 if head else len(data)

    def do_HEAD(self):
        self.serve(True)

    def do_GET(self):
        self.serve(False)


class Hub(Base):
    def serve(self, head):
        raw_path = urllib.parse.urlsplit(self.path).path
        if raw_path == "/stats":
            return self.send_json({"cdn_gets": CDN_GETS, "cdn_bytes": CDN_BYTES,
                                   "cdn_auth": CDN_AUTH,
                                   "hub_requests": HUB_REQUESTS}, head)
        with LOCK:
            HUB_REQUESTS.append(f"{self.command} {self.path}")
        authorized = self.headers.get("Authorization") == "Bearer hf_test_token"
        if raw_path == "/api/whoami-v2":
            if not authorized:
                return self.error(401, "Unauthorized")
            return self.send_json({"type": "user", "name": "tester", "auth": {
                "accessToken": {"displayName": "ballast-test", "role": "read"}}}, head)
        # A repo id without an organisation ("gpt2") takes the place of org/name: "_/gpt2".
        resolve = (re.fullmatch(r"/([^/]+)/([^/]+)/resolve/([^/]+)/(.+)", raw_path) or
                   re.fullmatch(r"/()([^/]+)/resolve/([^/]+)/(.+)", raw_path))
        api = (re.fullmatch(r"/api/models/([^/]+)/([^/]+)(?:/(revision|tree)/([^/]+))?/?",
                            raw_path) or
               re.fullmatch(r"/api/models/()([^/]+)(?:/(revision|tree)/([^/]+))?/?", raw_path))
        match = resolve or api
        if not match:
            return self.error(404, "NotFound")
        org, name = (urllib.parse.unquote(g) for g in match.group(1, 2))
        repo = f"{org}/{name}" if org else name
        org = org or "_"
        if org == "gated" and not authorized:
            return self.error(401, "GatedRepo")
        if org == "private" and not authorized:
            return self.send(401, {"X-Error-Code": "RepoNotFound", "Content-Length": "0",
                                   "X-Error-Message": "Invalid username or password."})
        repo_branches = branches(org, name)
        if not repo_branches:
            return self.error(404, "RepoNotFound")
        revision = urllib.parse.unquote(match.group(3) if resolve else (match.group(4) or "main"))
        folder = commit = None
        for branch, branch_folder in repo_branches.items():
            if revision in (branch, commit_of(repo, branch)):
                folder, commit = branch_folder, commit_of(repo, branch)
        if folder is None:
            return self.error(404, "RevisionNotFound")
        if api:
            return self.serve_api(repo, folder, commit, api.group(3) == "tree", head)
        file = urllib.parse.unquote(match.group(4))
        full = os.path.join(FOLDER, folder, file)
        if ".." in file.split("/") or not os.path.isfile(full):
            return self.send(404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": commit,
                                   "Content-Length": "0"})
        headers = {"X-Repo-Commit": commit_of(repo, "moved") if name == "moving" else commit}
        if not lfs(file):
            with open(full, "rb") as f:
                data = f.read()
            headers["ETag"] = '"' + git_blob_sha1(data) + '"'
            return self.serve_bytes(data, headers, head)
        sha = lfs_sha256(full)
        stated = hashlib.sha256(b"other").hexdigest() if name == "corrupt" else sha
        cdn = CDN_URL or f"http://127.0.0.1:{self.server.cdn_port}"
        location = urllib.parse.quote(f"/{folder}/{file}")
        headers.update({"ETag": f'"{stated}"', "X-Linked-Etag": f'"{stated}"',
                        "X-Linked-Size": str(os.path.getsize(full)), "Content-Length": "0",
                        "Location": f"{cdn}{location}"})
        self.send(302, headers)

    def serve_api(self, repo, folder, commit, tree, head):
        entries = []
        for file in files_of(folder):
            with open(os.path.join(FOLDER, folder, file), "rb") as f:
                data = f.read()
            entry = {"type": "file", "path": file, "size": len(data), "oid": git_blob_sha1(data)}
            if lfs(file):
                entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data),
                                "pointerSize": 134}
            entries.append(entry)
        if tree:
            return self.send_json(entries, head)
        self.send_json({"id": repo, "modelId": repo, "sha": commit, "private": False,
                        "gated": "manual" if repo.startswith("gated/") else False,
                        "siblings": [{"rfilename": e["path"]} for e in entries]}, head)


class Cdn(Base):
    def serve(self, head):
        file = urllib.parse.unquote(self.path).lstrip("/")
        with LOCK:
            CDN_AUTH.append(self.headers.get("Authorization", ""))
            if not head:
                CDN_GETS[file] = CDN_GETS.get(file, 0) + 1
        full = os.path.join(FOLDER, file)
        if ".." in file.split("/") or not os.path.isfile(full):
            return self.send(404, {"Content-Length": "0"})
        with open(full, "rb") as f:
            data = f.read()
        sent = self.serve_bytes(data, {"ETag": '"cdn"'}, head)
        with LOCK:
            CDN_BYTES[file] = CDN_BYTES.get(file, 0) + sent


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


def main():
    hub = QuietServer(("127.0.0.1", 0), Hub)
    cdn = QuietServer(("127.0.0.1", 0), Cdn)
    hub.cdn_port = cdn.server_address[1]
    threading.Thread(target=cdn.serve_forever, daemon=True).start()
    print(hub.server_address[1], cdn.server_address[1], flush=True)
    hub.serve_forever()


if __name__ == "__main__":
    main()
