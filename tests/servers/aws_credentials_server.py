#!/usr/bin/env python3
"""A stand-in for the AWS credential endpoints ballast's chain asks, for its tests; standard
library only, bound to 127.0.0.1.

Usage: aws_credentials_server.py ACCESS_KEY:SECRET_KEY:SESSION_TOKEN SECRET_OF_THE_CALLER

It prints its port as the first stdout line and hands out the one key pair it is given (the
S3 test proxy knows it) on each of:

  PUT /latest/api/token                         IMDSv2 session token; needs
                                                X-aws-ec2-metadata-token-ttl-seconds
  GET /latest/meta-data/iam/security-credentials/         the role name ("ballast-role")
  GET /latest/meta-data/iam/security-credentials/ROLE     IMDS credentials
                                                (both need X-aws-ec2-metadata-token)
  GET /container/credentials                    container credentials; needs
                                                Authorization: SECRET_OF_THE_CALLER
  GET /federation/credentials?role_name=&account_id=      SSO GetRoleCredentials; needs
                                                x-amz-sso_bearer_token: SECRET_OF_THE_CALLER

A request without its header or secret is answered 401. Credentials expire `expires_in`
seconds after they are handed out (3600 at first).

  POST /_set?expires_in=N&fail=MODE   changes both; MODE: none, 500 (an error status),
                                      malformed (not JSON), huge (a 1 MiB body), expired
                                      (an Expiration in the past)
  GET /_stats                         JSON: how many times each endpoint was asked
                                      (imds_token, imds_role, imds_credentials, container,
                                      sso, refused) and the last SSO query
"""
import ctypes
import datetime
import http.server
import json
import signal
import sys
import threading
import urllib.parse

access, secret, token = sys.argv[1].split(":", 2)
caller_secret = sys.argv[2]
IMDS_TOKEN = "imds-session-token"
ROLE = "ballast-role"
CREDENTIALS_PATH = "/latest/meta-data/iam/security-credentials/"
state = {"expires_in": 3600, "fail": "none"}
stats = {"imds_token": 0, "imds_role": 0, "imds_credentials": 0, "container": 0, "sso": 0,
         "refused": 0, "sso_query": {}}
lock = threading.Lock()


def expiration(now=None):
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return now + datetime.timedelta(seconds=state["expires_in"])


def iso(when):
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def refuse(self):
        with lock:
            stats["refused"] += 1
        self.answer(401, '{"message": "unauthorized"}')

    def credentials(self, counter, document):
        with lock:
            stats[counter] += 1
            fail = state["fail"]
        if fail == "500":
            self.answer(500, '{"message": "the stand-in fails on purpose"}')
        elif fail == "malformed":
            self.answer(200, "{not json")
        elif fail == "huge":
            self.answer(200, "x" * (1 << 20))
        else:
            self.answer(200, json.dumps(document))

    def document(self, token_field):
        when = expiration()
        if state["fail"] == "expired":
            when = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
        return {"Code": "Success", "AccessKeyId": access, "SecretAccessKey": secret,
                token_field: token, "Expiration": iso(when)}

    def do_PUT(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/latest/api/token":
            return self.answer(404, "{}")
        if not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self.answer(400, "{}")
        with lock:
            stats["imds_token"] += 1
        self.answer(200, IMDS_TOKEN, "text/plain")

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/_set":
            return self.answer(404, "{}")
        for key, value in urllib.parse.parse_qsl(url.query):
            state[key] = int(value) if key == "expires_in" else value
        self.answer(200, "{}")

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/_stats":
            with lock:
                return self.answer(200, json.dumps(stats))
        if url.path.startswith(CREDENTIALS_PATH):
            if self.headers.get("X-aws-ec2-metadata-token") != IMDS_TOKEN:
                return self.refuse()
            if url.path == CREDENTIALS_PATH:
                with lock:
                    stats["imds_role"] += 1
                return self.answer(200, ROLE, "text/plain")
            if url.path != CREDENTIALS_PATH + ROLE:
                return self.answer(404, "{}")
            return self.credentials("imds_credentials", self.document("Token"))
        if url.path == "/container/credentials":
            if self.headers.get("Authorization") != caller_secret:
                return self.refuse()
            return self.credentials("container", self.document("Token"))
        if url.path == "/federation/credentials":
            if self.headers.get("x-amz-sso_bearer_token") != caller_secret:
                return self.refuse()
            with lock:
                stats["sso_query"] = dict(urllib.parse.parse_qsl(url.query))
            millis = int(expiration().timestamp() * 1000)
            if state["fail"] == "expired":
                millis = 1000
            return self.credentials("sso", {"roleCredentials": {
                "accessKeyId": access, "secretAccessKey": secret, "sessionToken": token,
                "expiration": millis}})
        self.answer(404, "{}")


ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: no server outlives its test
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
