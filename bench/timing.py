"""Runs one benchmark command and reads its timing: each parser returns (seconds, peak RSS bytes,
CPU seconds of the whole process), the seconds being the tool's own figure where it reports one
(ballast --json, the Python drivers, dd, fio, curl) and the process's wall time otherwise."""
import json
import subprocess
import tempfile
import time


def run_timed(cmd):
    """Runs cmd under /usr/bin/time; returns (stdout, stderr, peak RSS bytes, CPU seconds of
    the whole process: user + system)."""
    with tempfile.NamedTemporaryFile("r") as usage:
        p = subprocess.run(["/usr/bin/time", "-o", usage.name, "-f", "%M %U %S"] + cmd,
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {p.stderr.strip()[-400:]}")
        rss, user, system = usage.read().split()[-3:]
        return p.stdout, p.stderr, int(rss) * 1024, float(user) + float(system)


def json_seconds(cmd):
    out, _, rss, cpu = run_timed(cmd)
    return json.loads(out[out.index("{"):])["seconds"], rss, cpu


def dd_seconds(cmd):
    _, err, rss, cpu = run_timed(cmd)
    # "... bytes (...) copied, 0.123 s, 8.7 GB/s"
    return float(err.strip().splitlines()[-1].split("copied,")[1].split("s,")[0]), rss, cpu


def fio_seconds(cmd):
    out, _, rss, cpu = run_timed(cmd + ["--output-format=json"])
    job = json.loads(out)["jobs"][0]["read"]
    return job["runtime"] / 1000.0, rss, cpu


def curl_seconds(cmd):
    """curl's own time_total (connect to last byte); cmd must not print anything else."""
    out, _, rss, cpu = run_timed(cmd + ["-s", "-S", "-f", "-w", "%{time_total}"])
    return float(out.strip()), rss, cpu


def wall_seconds(cmd):
    """The whole process, start-up included (for tools that report no timing of their own)."""
    start = time.perf_counter()
    _, _, rss, cpu = run_timed(cmd)
    return time.perf_counter() - start, rss, cpu
