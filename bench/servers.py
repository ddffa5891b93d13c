"""The local servers of the download and remote rows, all on 127.0.0.1: nginx (sendfile) serving
the checkpoint, moto's standalone S3 server holding one object (a smaller checkpoint: moto
reads the whole object for every ranged GET, so its cost grows with size x requests), and the Hub
stand-in tests/servers/hub_server.py whose LFS redirects go to that nginx (HUB_CDN_URL), so
every client of a row gets its bytes from the same server. Started once for a run; sets the
variables clients read (AWS_*, HF_ENDPOINT) in os.environ. Used by bench/measure.py."""
import os
import socket
import subprocess
import tempfile
import time
import urllib.request

NGINX_CONF = """daemon off; master_process off; worker_processes 1; pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 256; }}
http {{
  access_log off; sendfile on; tcp_nopush on; keepalive_requests 100000;
  client_body_temp_path {d}/tmp/b; proxy_temp_path {d}/tmp/p; fastcgi_temp_path {d}/tmp/f;
  uwsgi_temp_path {d}/tmp/u; scgi_temp_path {d}/tmp/s;
  types {{ }} default_type application/octet-stream;
  server {{ listen 127.0.0.1:{port}; root {d}/root; }}
}}
"""
BUCKET, KEY = "bench", "llama4/model.safetensors"
HUB_REPO, HUB_FILE = "bench/llama", "model.safetensors"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url, seconds=30):
    end = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            if time.monotonic() > end:
                raise RuntimeError(f"bench: no server at {url}")
            time.sleep(0.1)


class Servers:
    """with Servers(checkpoint, s3_object, venv_python, repo_root) as s: s.http_url and
    s.hub_url / s.hub_resolve_url (HUB_REPO, HUB_FILE) serve the checkpoint, s.s3_url
    (BUCKET, KEY) holds s3_object."""

    def __init__(self, checkpoint, s3_object, python, root):
        self.checkpoint, self.s3_object, self.python, self.root = checkpoint, s3_object, python, root
        self.procs = []

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="ballast-bench-servers-")
        d = self.dir
        for sub in ("tmp", "root/files", f"root/hub/{HUB_REPO}"):
            os.makedirs(os.path.join(d, sub))
        os.symlink(self.checkpoint, f"{d}/root/files/model.safetensors")
        os.symlink(self.checkpoint, f"{d}/root/hub/{HUB_REPO}/{HUB_FILE}")
        port = free_port()
        with open(f"{d}/nginx.conf", "w") as f:
            f.write(NGINX_CONF.format(d=d, port=port))
        self.start(["/usr/sbin/nginx", "-p", d, "-c", f"{d}/nginx.conf", "-e", f"{d}/error.log"])
        self.http_url = f"http://127.0.0.1:{port}/files/model.safetensors"
        wait_for(self.http_url)

        hub = self.start([self.python, f"{self.root}/tests/servers/hub_server.py", f"{d}/root/hub"],
                         env={**os.environ, "HUB_CDN_URL": f"http://127.0.0.1:{port}/hub"},
                         stdout=subprocess.PIPE)
        hub_port = int(hub.stdout.readline().split()[0])
        os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{hub_port}"
        os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
        self.hub_url = f"hf://{HUB_REPO}/{HUB_FILE}"
        self.hub_resolve_url = f"http://127.0.0.1:{hub_port}/{HUB_REPO}/resolve/main/{HUB_FILE}"

        s3_port = free_port()
        moto = os.path.join(os.path.dirname(self.python), "moto_server")
        self.start([moto, "-H", "127.0.0.1", "-p", str(s3_port)])
        os.environ.update({
            "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{s3_port}", "AWS_EC2_METADATA_DISABLED": "true",
            "BALLAST_S3_ADDRESSING_STYLE": "path",
            "RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING": "0"})
        wait_for(os.environ["AWS_ENDPOINT_URL"])
        # Without checksums: botocore's default aws-chunked upload body took moto over 10 minutes.
        subprocess.run([self.python, "-c", UPLOAD, BUCKET, KEY, self.s3_object], check=True,
                       env={**os.environ, "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required"})
        self.s3_url = f"s3://{BUCKET}/{KEY}"
        return self

    def start(self, cmd, **kw):
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             text=True, **{"stdout": subprocess.DEVNULL, **kw})
        self.procs.append(p)
        return p

    def __exit__(self, *exc):
        for p in reversed(self.procs):
            p.terminate()
            p.wait(timeout=10)
        subprocess.run(["rm", "-rf", self.dir])


UPLOAD = """
import sys, boto3
bucket, key, path = sys.argv[1:4]
s3 = boto3.client("s3")
s3.create_bucket(Bucket=bucket)
s3.upload_file(path, bucket, key)
"""
