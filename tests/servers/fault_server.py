#!/usr/bin/python3
"""A fault-injecting HTTP server for ballast's tests, bound to 127.0.0.1 only.

Usage: fault_server.py FOLDER. Prints "PORT OTHER_PORT" on its first stdout line: PORT serves
FOLDER with the fault named by the first path segment, OTHER_PORT is the redirect target.

  /ok/F            correct ranged responses (206 + Content-Range)
  /norange/F       ignores Range: 200 with the whole body
  /drop/F          every other response breaks off half-way through its body
  /burst/CODE/N/F  the first N requests of this path answer CODE with Retry-After: 1
  /stall/F         accepts and says nothing for 20 s
  /flip/F          correct lengths, one flipped byte in every body
  /long/F          10 bytes more than requested (Content-Length says so)
  /badrange/F      a Content-Range one byte off the request
  /etag/F          a different ETag on GET than on HEAD
  /auth/F          401 without "Authorization: Bearer secret-token", else 302 to OTHER_PORT
  /stats           JSON: requests per path, Authorization headers OTHER_PORT saw
"""
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FOLDER = sys.argv[1]
LOCK = threading.Lock()
COUNTS = {}
OTHER_AUTH = []


def count(key):
    with LOCK:
        COUNTS[key] = COUNTS.get(key, 0) + 1
        return COUNTS[key]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.serve(head=True)

    def do_GET(self):
        self.serve(head=False)

    def send(self, status, headers, body=b""):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if body:
            self.wfile.write(body)

    def serve(self, head):
        parts = self.path.lstrip("/").split("/")
        mode = parts[0]
        if mode == "stats":
            body = json.dumps({"counts": COUNTS, "other_auth": OTHER_AUTH}).encode()
            return self.send(200, {"Content-Length": str(len(body))}, body)
        n = count(self.command + " " + self.path)
        if mode == "burst":
            code, times, name = int(parts[1]), int(parts[2]), "/".join(parts[3:])
            if n <= times:
                return self.send(code, {"Retry-After": "1", "Content-Length": "0"})
        else:
            name = "/".join(parts[1:])
        if mode == "stall":
            time.sleep(20)
            self.close_connection = True
            return
        if mode == "auth":
            if self.headers.get("Authorization") != "Bearer secret-token":
                return self.send(401, {"Content-Length": "0"})
            port = self.server.other_port
            return self.send(302, {"Location": f"http://127.0.0.1:{port}/ok/{name}",
                                   "Content-Length": "0"})
        path = os.path.join(FOLDER, name)
        if not os.path.isfile(path):
            return self.send(404, {"Content-Length": "0"})
        with open(path, "rb") as f:
            data = f.read()
        etag = '"v1"'
        if mode == "etag" and not head:
            etag = '"v2"'
        headers = {"ETag": etag, "Accept-Ranges": "bytes"}
        match = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        if head:
            headers["Content-Length"] = str(len(data))
            return self.send(200, headers)
        if mode == "norange" or not match:
            headers["Content-Length"] = str(len(data))
            return self.send(200, headers, data)
        first, last = int(match.group(1)), min(int(match.group(2)), len(data) - 1)
        body = data[first:last + 1]
        shown_first, shown_last = first, last
        if mode == "flip" and body:
            body = bytes([body[0] ^ 0xFF]) + body[1:]
        if mode == "long":
            body = body + b"x" * 10
        if mode == "badrange":
            shown_first, shown_last = first + 1, last + 1
        headers["Content-Range"] = f"bytes {shown_first}-{shown_last}/{len(data)}"
        headers["Content-Length"] = str(len(body))
        if mode == "drop" and n % 2 == 1 and len(body) > 1:
            self.send(206, headers, body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.send(206, headers, body)


class OtherHandler(Handler):
    def serve(self, head):
        with LOCK:
            OTHER_AUTH.append(self.headers.get("Authorization", ""))
        super().serve(head)


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # clients that hang up early are part of the tests


def main():
    main_server = QuietServer(("127.0.0.1", 0), Handler)
    other_server = QuietServer(("127.0.0.1", 0), OtherHandler)
    main_server.other_port = other_server.other_port = other_server.server_address[1]
    threading.Thread(target=other_server.serve_forever, daemon=True).start()
    print(main_server.server_address[1], other_server.server_address[1], flush=True)
    main_server.serve_forever()


if __name__ == "__main__":
    main()
