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
  /changing/F      F for the path's first request, F.v2 (same size) after it: HEAD states
                   ETag "v1" or "v2", GET states none; If-Match of another version gets 412
  /unvalidated/F   neither ETag nor Last-Modified, ever: F for the path's first two requests
                   (the HEAD and the first GET), F.v2 (same size) after them
  /auth/F          401 without "Authorization: Bearer secret-token", else 302 to OTHER_PORT
  /hop/CODE/F      CODE (a redirect) to OTHER_PORT's /ok/F, whatever the request carries
  /samehop/CODE/F  CODE (a redirect) to this port's /seen/F
  /seen/F          as /ok/F, recording the request's headers
  /hold/F          accepts and never answers
  /trickle/F       ignores Range: a 200 whose body comes one byte every 0.2 s
  /endless/CODE/F  CODE (404, 302 to /ok/F, ...) with a body that never ends
  /continue/F      "100 Continue" interim responses, forever
  /headers/F       a 200 whose header lines never end
  /huge/F          HEAD and GET claim 256 MiB; GET sends zeros (counted) until the client leaves
  /cut/N/F         as /ok/F with ETag = F's sha256 (so a new F has a new one), except that the
                   first GET whose range holds F's byte N breaks off just before it (once per
                   F while the server runs)
  /slow/F          as /ok/F, but bodies go out in 64 KiB pieces 10 ms apart (about 6 MiB/s)
  /stats           JSON: requests per path, Authorization headers OTHER_PORT saw, all headers
                   OTHER_PORT and /seen saw, bytes /huge sent, body bytes of 206 answers per path
                   ("sent")
"""
import hashlib
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
OTHER_HEADERS = []
SEEN_HEADERS = []
HUGE_SENT = [0]
HUGE_SIZE = 256 << 20
SENT = {}
CUT_DONE = set()


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

    def hostile(self, mode, name, head, code):
        """Answers that never end; each returns when the client hangs up."""
        self.close_connection = True
        out = self.wfile
        try:
            if mode == "hold":
                time.sleep(3600)
            elif mode == "trickle":
                with open(os.path.join(FOLDER, name), "rb") as f:
                    data = f.read()
                out.write(f"HTTP/1.1 200 OK\r\nContent-Length: {len(data)}\r\n\r\n".encode())
                for i in range(0 if head else len(data)):
                    out.write(data[i:i + 1])
                    out.flush()
                    time.sleep(0.2)
            elif mode == "continue":
                while True:
                    out.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                    out.flush()
                    time.sleep(0.001)
            elif mode == "headers":
                out.write(b"HTTP/1.1 200 OK\r\n")
                while True:
                    out.write(b"X-Filler: " + b"y" * 1000 + b"\r\n")
                    out.flush()
            else:  # endless body
                port = self.server.server_address[1]
                out.write(f"HTTP/1.1 {code} Whatever\r\nConnection: close\r\n"
                          f"Location: http://127.0.0.1:{port}/ok/{name}\r\n\r\n".encode())
                while not head:
                    out.write(b"z" * 4096)
                    out.flush()
        except OSError:
            pass

    def huge(self, head):
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Length", str(HUGE_SIZE))
        self.end_headers()
        if head:
            return
        chunk = b"\0" * (64 << 10)
        try:
            for _ in range(HUGE_SIZE // len(chunk)):
                self.wfile.write(chunk)
                with LOCK:
                    HUGE_SENT[0] += len(chunk)
        except OSError:
            pass

    def serve(self, head):
        parts = self.path.split("?")[0].lstrip("/").split("/")
        mode = parts[0]
        if mode == "stats":
            body = json.dumps({"counts": COUNTS, "other_auth": OTHER_AUTH,
                               "other_headers": OTHER_HEADERS, "seen_headers": SEEN_HEADERS,
                               "huge_sent": HUGE_SENT[0], "sent": SENT}).encode()
            return self.send(200, {"Content-Length": str(len(body))}, body)
        n = count(self.command + " " + self.path)
        if mode == "burst":
            code, times, name = int(parts[1]), int(parts[2]), "/".join(parts[3:])
            if n <= times:
                return self.send(code, {"Retry-After": "1", "Content-Length": "0"})
        elif mode in ("hop", "samehop", "endless"):
            code, name = int(parts[1]), "/".join(parts[2:])
        elif mode == "cut":
            cut_at, name = int(parts[1]), "/".join(parts[2:])
        else:
            name = "/".join(parts[1:])
        if mode in ("hop", "samehop"):
            port = self.server.other_port if mode == "hop" else self.server.server_address[1]
            target = "ok" if mode == "hop" else "seen"
            return self.send(code, {"Location": f"http://127.0.0.1:{port}/{target}/{name}",
                                    "Content-Length": "0"})
        if mode == "seen":
            with LOCK:
                SEEN_HEADERS.append(dict(self.headers.items()))
        if mode in ("hold", "trickle", "endless", "continue", "headers"):
            return self.hostile(mode, name, head, locals().get("code"))
        if mode == "huge":
            return self.huge(head)
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
        version = 1
        if mode == "changing":
            version = 1 if count("changing " + name) == 1 else 2
            if version == 2:
                path += ".v2"
        if mode == "unvalidated" and count("unvalidated " + name) > 2:
            path += ".v2"
        if not os.path.isfile(path):
            return self.send(404, {"Content-Length": "0"})
        with open(path, "rb") as f:
            data = f.read()
        etag = f'"v{version}"'
        if mode == "cut":
            etag = '"' + hashlib.sha256(data).hexdigest() + '"'
        if mode == "etag" and not head:
            etag = '"v2"'
        if mode == "changing" and self.headers.get("If-Match", etag) != etag:
            return self.send(412, {"Content-Length": "0"})
        headers = {"ETag": etag, "Accept-Ranges": "bytes"}
        if (mode == "changing" and not head) or mode == "unvalidated":
            del headers["ETag"]
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
        with LOCK:
            SENT[self.path] = SENT.get(self.path, 0) + len(body)
            cut = mode == "cut" and name not in CUT_DONE and first <= cut_at <= last
            if cut:
                CUT_DONE.add(name)
        if cut:
            self.send(206, headers, body[: cut_at - first])
            self.wfile.flush()
            self.close_connection = True
            with LOCK:
                SENT[self.path] -= len(body) - (cut_at - first)
            return
        if mode == "slow":
            self.send(206, headers)
            try:
                for start in range(0, len(body), 64 << 10):
                    self.wfile.write(body[start:start + (64 << 10)])
                    time.sleep(0.01)
            except OSError:
                self.close_connection = True
            return
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
            OTHER_HEADERS.append(dict(self.headers.items()))
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
