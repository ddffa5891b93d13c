#!/usr/bin/python3
"""A Hugging Face Hub stand-in for ballast's tests, bound to 127.0.0.1 only.

Usage: hub_server.py FOLDER. FOLDER/<org>/<name>/<path> are the repositories' files. Prints
"PORT CDN_PORT". Like the Hub, HEAD/GET {org}/{name}/resolve/{revision}/{path} answers with
X-Repo-Commit; LFS files (everything but *.json and *.md) get ETag/X-Linked-Etag = their
sha256, X-Linked-Size and a 302 to the CDN port, which serves them with Range support; other
files are served directly. Revisions: "main" or the repo's commit (sha1 of its id). Repos of
org "gated" answer 401 without "Authorization: Bearer hf_test_token". Repo "org/corrupt"
states a wrong sha256. GET /stats: CDN downloads per file and Authorization headers it saw.
With HUB_CDN_URL set, LFS redirects go to {HUB_CDN_URL}/{org}/{name}/{path} instead (the
benchmark's nginx serving the same folder), and each file's sha256 is computed once.
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
CDN_AUTH = []


def commit_of(repo):
    return hashlib.sha1(repo.encode()).hexdigest()


def lfs(path):
    return not (path.endswith(".json") or path.endswith(".md"))


@functools.lru_cache(maxsize=None)
def sha256_of(path, size, mtime_ns):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def lfs_sha256(path):
    st = os.stat(path)
    return sha256_of(path, st.st_size, st.st_mtime_ns)


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

    def serve_bytes(self, data, headers, head):
        match = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        headers["Accept-Ranges"] = "bytes"
        if match and not head:
            first, last = int(match.group(1)), min(int(match.group(2)), len(data) - 1)
            body = data[first:last + 1]
            headers["Content-Range"] = f"bytes {first}-{last}/{len(data)}"
            headers["Content-Length"] = str(len(body))
            return self.send(206, headers, body)
        headers["Content-Length"] = str(len(data))
        self.send(200, headers, data, head)

    def do_HEAD(self):
        self.serve(True)

    def do_GET(self):
        self.serve(False)


class Hub(Base):
    def serve(self, head):
        path = urllib.parse.unquote(self.path)
        if path == "/stats":
            body = json.dumps({"cdn_gets": CDN_GETS, "cdn_auth": CDN_AUTH}).encode()
            return self.send(200, {"Content-Length": str(len(body))}, body)
        m = re.fullmatch(r"/([^/]+)/([^/]+)/resolve/([^/]+)/(.+)", path)
        if not m:
            return self.send(404, {"Content-Length": "0"})
        org, name, revision, file = m.groups()
        repo = f"{org}/{name}"
        if org == "gated" and self.headers.get("Authorization") != "Bearer hf_test_token":
            return self.send(401, {"X-Error-Code": "GatedRepo", "Content-Length": "0"})
        commit = commit_of(repo)
        if revision not in ("main", commit):
            return self.send(404, {"X-Error-Code": "RevisionNotFound", "Content-Length": "0"})
        full = os.path.join(FOLDER, org, name, file)
        if not os.path.isfile(full):
            return self.send(404, {"X-Error-Code": "EntryNotFound", "Content-Length": "0"})
        headers = {"X-Repo-Commit": commit}
        if not lfs(file):
            with open(full, "rb") as f:
                data = f.read()
            headers["ETag"] = '"' + hashlib.sha1(data).hexdigest() + '"'
            return self.serve_bytes(data, headers, head)
        sha = lfs_sha256(full)
        stated = hashlib.sha256(b"other").hexdigest() if name == "corrupt" else sha
        cdn = CDN_URL or f"http://127.0.0.1:{self.server.cdn_port}"
        headers.update({"ETag": f'"{stated}"', "X-Linked-Etag": f'"{stated}"',
                        "X-Linked-Size": str(os.path.getsize(full)), "Content-Length": "0",
                        "Location": f"{cdn}/{org}/{name}/{file}"})
        self.send(302, headers)


class Cdn(Base):
    def serve(self, head):
        file = urllib.parse.unquote(self.path).lstrip("/")
        with LOCK:
            CDN_AUTH.append(self.headers.get("Authorization", ""))
            if not head:
                CDN_GETS[file] = CDN_GETS.get(file, 0) + 1
        full = os.path.join(FOLDER, file)
        if not os.path.isfile(full):
            return self.send(404, {"Content-Length": "0"})
        with open(full, "rb") as f:
            data = f.read()
        self.serve_bytes(data, {"ETag": '"cdn"'}, head)


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
