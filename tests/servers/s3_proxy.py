#!/usr/bin/env python3
"""A SigV4-verifying front for moto's S3 server, for ballast's tests, bound to 127.0.0.1 only.

Usage: s3_proxy.py MOTO_SERVER REGION ACCESS_KEY:SECRET_KEY[:SESSION_TOKEN] ...
Run it with the project's virtual environment (.venv: moto[server] and botocore from PyPI).

moto's standalone server (MOTO_SERVER, the `moto_server` script) is a real S3-compatible
server that keeps the objects in memory, but it does not check SigV4 signatures. This front
starts it on a free port, listens on another port and prints that port as its first stdout
line. It checks every request as S3
does: the Authorization header's signature is recomputed with botocore's S3SigV4Auth from the
request as received (method, raw path and query, the signed headers, X-Amz-Content-SHA256,
X-Amz-Date) and the known secret of its access key, and refused with S3's own XML errors:
SignatureDoesNotMatch (403), InvalidAccessKeyId (403), AuthorizationHeaderMalformed (400, a
wrong region), InvalidToken (403, a key pair with a session token used without it),
XAmzContentSHA256Mismatch (400). Requests without Authorization may only read the bucket
named "public" (whose bucket policy lets anyone read it in moto too). Accepted requests go on
to moto path-style (a virtual-hosted request to BUCKET.localhost:PORT is rewritten), still
carrying their Authorization header, which moto takes as "signed" without checking it, and
its answers come back.

STS too: an unsigned POST of the query form with Action=AssumeRoleWithWebIdentity (what an
AWS SDK sends for web identity credentials), or one with Action=AssumeRole signed (service
"sts", checked as above with botocore's SigV4Auth over the body) with known keys, goes to
moto's STS, and the temporary key pair and session token in its answer become known keys, so
requests signed with them pass.

  GET /_stats   JSON: every request that reached moto (method, host, path-style path, range,
                status, bytes; for STS: action, role_arn, session_name, web_identity_token,
                signed_by: the access key of a signed request)
  POST /_reset  clears the stats
"""
import ctypes
import hashlib
import hmac
import http.client
import http.server
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from xml.sax.saxutils import escape

from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

MAX_BODY = 256 << 20
AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/(s3|sts)/aws4_request, ?"
    r"SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})"
)
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}

moto_server, region = sys.argv[1], sys.argv[2]
keys = {}  # access key -> (secret, session token or None)
for spec in sys.argv[3:]:
    access, secret, *token = spec.split(":", 2)
    keys[access] = (secret, token[0] if token else None)
stats = []
stats_lock = threading.Lock()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Error(Exception):
    def __init__(self, status, code, message, **extra):
        super().__init__(code)
        self.status, self.code, self.message, self.extra = status, code, message, extra


def error_xml(e):
    fields = "".join(f"<{k}>{escape(v)}</{k}>" for k, v in e.extra.items())
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{e.code}</Code><Message>{escape(e.message)}</Message>{fields}"
        "<RequestId>ballast-test</RequestId></Error>"
    ).encode()


def path_style(handler):
    """The request's path in path-style: a virtual-hosted BUCKET.localhost host moves into it."""
    host = handler.headers.get("Host", "").rsplit(":", 1)[0]
    if host.endswith(".localhost"):
        return "/" + host[: -len(".localhost")] + handler.path
    return handler.path


def verify(handler, body):
    auth = handler.headers.get("Authorization")
    if auth is None:
        bucket = path_style(handler).lstrip("/").split("/", 1)[0].split("?", 1)[0]
        if bucket == "public" and handler.command in ("GET", "HEAD"):
            return
        raise S3Error(403, "AccessDenied", "Access Denied")
    m = AUTH.fullmatch(auth)
    if not m:
        raise S3Error(400, "AuthorizationHeaderMalformed", "The authorization header is malformed")
    access, date, scope_region, service, signed, signature = m.groups()
    if service == "sts" and handler.command != "POST":
        raise S3Error(400, "AuthorizationHeaderMalformed", "STS is asked by POST here")
    if access not in keys:
        raise S3Error(
            403,
            "InvalidAccessKeyId",
            "The AWS Access Key Id you provided does not exist in our records.",
            AWSAccessKeyId=access,
        )
    if scope_region != region:
        raise S3Error(
            400,
            "AuthorizationHeaderMalformed",
            f"the region '{scope_region}' is wrong; expecting '{region}'",
            Region=region,
        )
    secret, token = keys[access]
    amz_date = handler.headers.get("X-Amz-Date", "")
    content_sha = handler.headers.get("X-Amz-Content-SHA256")
    if service == "sts":  # the payload hash is computed from the body, not sent
        content_sha = hashlib.sha256(body).hexdigest()
    if content_sha is None:
        raise S3Error(400, "InvalidRequest", "Missing required header: x-amz-content-sha256")
    payload_hashed = re.fullmatch(r"[0-9a-f]{64}", content_sha) is not None
    if payload_hashed and hashlib.sha256(body).hexdigest() != content_sha:
        raise S3Error(
            400,
            "XAmzContentSHA256Mismatch",
            "The provided 'x-amz-content-sha256' header does not match what was computed.",
        )
    names = signed.split(";")
    if token is not None and (
        handler.headers.get("X-Amz-Security-Token") != token or "x-amz-security-token" not in names
    ):
        raise S3Error(403, "InvalidToken", "The provided token is malformed or otherwise invalid.")
    headers = {}
    for name in names:
        values = handler.headers.get_all(name)
        if values is None:  # signed but not sent: the signature covers another request
            raise S3Error(403, "SignatureDoesNotMatch", f"the signed header {name} is missing")
        headers[name] = ",".join(values)
    url = "http://" + headers.get("host", "") + handler.path
    request = AWSRequest(method=handler.command, url=url, headers=headers, data=body)
    request.context["timestamp"] = amz_date
    auth = S3SigV4Auth if service == "s3" else SigV4Auth
    signer = auth(Credentials(access, secret, token), service, region)
    canonical = signer.canonical_request(request)
    string_to_sign = signer.string_to_sign(request, canonical)
    expected = signer.signature(string_to_sign, request)
    ok = (
        amz_date[:8] == date
        and signer.signed_headers(signer.headers_to_sign(request)) == signed
        and hmac.compare_digest(expected, signature)
    )
    if not ok:
        print(f"s3_proxy: signature mismatch for\n{canonical}", file=sys.stderr, flush=True)
        raise S3Error(
            403,
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided. "
            "Check your key and signing method.",
            AWSAccessKeyId=access,
            StringToSign=string_to_sign,
        )


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle's algorithm and the
        # client's delayed ACK hold every keep-alive response back 40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass

    def send_body(self, status, headers, body, length=None):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        length = int(self.headers.get("Content-Length", "0"))
        if length < 0 or length > MAX_BODY:
            self.send_error(413)
            return
        body = self.rfile.read(length)
        if self.path == "/_stats":
            with stats_lock:
                data = json.dumps(stats).encode()
            self.send_body(200, [("Content-Type", "application/json")], data)
            return
        if self.path == "/_reset":
            with stats_lock:
                stats.clear()
            self.send_body(200, [], b"")
            return
        if self.command == "POST":
            form = dict(urllib.parse.parse_qsl(body.decode("utf-8", "replace")))
            signed = "Authorization" in self.headers
            if form.get("Action") == ("AssumeRole" if signed else "AssumeRoleWithWebIdentity"):
                try:
                    if signed:
                        verify(self, body)
                except S3Error as e:
                    self.send_body(e.status, [("Content-Type", "application/xml")], error_xml(e))
                    return
                self.sts(body, form)
                return
        try:
            verify(self, body)
        except S3Error as e:
            self.send_body(e.status, [("Content-Type", "application/xml")], error_xml(e))
            return
        skip = {"host", "expect"}
        headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
        upstream = http.client.HTTPConnection("127.0.0.1", moto_port, timeout=30)
        path = path_style(self)
        upstream.request(self.command, path, body=body if length else None, headers=headers)
        response = upstream.getresponse()
        data = response.read()
        upstream.close()
        out = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP]
        size = response.getheader("Content-Length") if self.command == "HEAD" else None
        with stats_lock:
            stats.append(
                {
                    "method": self.command,
                    "host": self.headers.get("Host", ""),
                    "path": path,
                    "range": self.headers.get("Range", ""),
                    "status": response.status,
                    "bytes": len(data),
                }
            )
        self.send_body(response.status, out, data, size)

    def sts(self, body, form):
        upstream = http.client.HTTPConnection("127.0.0.1", moto_port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "expect")}
        upstream.request("POST", "/", body=body, headers=headers)
        response = upstream.getresponse()
        data = response.read()
        upstream.close()
        text = data.decode("utf-8", "replace")
        issued = {
            name: re.search(f"<{name}>([^<]*)</{name}>", text)
            for name in ("AccessKeyId", "SecretAccessKey", "SessionToken")
        }
        if response.status == 200 and all(issued.values()):
            access, secret, token = (issued[n].group(1) for n in issued)
            keys[access] = (secret, token)
        with stats_lock:
            stats.append(
                {
                    "method": "POST",
                    "host": self.headers.get("Host", ""),
                    "path": "/",
                    "action": form["Action"],
                    "role_arn": form.get("RoleArn", ""),
                    "session_name": form.get("RoleSessionName", ""),
                    "web_identity_token": form.get("WebIdentityToken", ""),
                    "signed_by": AUTH.fullmatch(self.headers["Authorization"]).group(1)
                    if "Authorization" in self.headers
                    else "",
                    "status": response.status,
                    "bytes": len(data),
                }
            )
        self.send_body(response.status, [("Content-Type", "text/xml")], data)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = handle_any


def die_with_parent():
    """Linux: SIGTERM when the parent dies, so no server outlives a killed test."""
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


die_with_parent()
moto_port = free_port()
moto = subprocess.Popen(
    [moto_server, "-H", "127.0.0.1", "-p", str(moto_port)],
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
    preexec_fn=die_with_parent,
)
deadline = time.time() + 30
while True:
    try:
        socket.create_connection(("127.0.0.1", moto_port), timeout=1).close()
        break
    except OSError:
        if time.time() > deadline or moto.poll() is not None:
            sys.exit("s3_proxy: moto_server did not start")
        time.sleep(0.1)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stop moto too (finally below)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True  # open keep-alive connections do not hold the exit back
print(server.server_address[1], flush=True)
try:
    server.serve_forever()
finally:
    moto.terminate()
