#!/usr/bin/python3
"""Figures of cooperative loading (docs/distributed.md): for N = 1, 2, 4 ranks, the bytes each
rank read from storage and the wall time of `ballast load --cooperative` of the ~1 GiB llama
checkpoint (bench/make_inputs.py), over loopback (Open MPI's TCP transport on one host) and
across network namespaces (tests/support/netns_hosts.sh: one namespace per rank, veth and a
bridge; needs root). The file is read once first, so reads come from the page cache: the
figures are the split of the reads and the exchange, not a disk.

Usage: bench/cooperative_load.py [BALLAST_CLI] (default build/release/tools/ballast).
Environment: BALLAST_BENCH_CACHE (inputs; default ~/.cache/ballast-bench)."""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NETNS = os.path.join(ROOT, "tests", "support", "netns_hosts.sh")
PREFIX, SUBNET = "bcbench", "10.214.0"


def checkpoint():
    cache = os.environ.get("BALLAST_BENCH_CACHE",
                           os.path.expanduser("~/.cache/ballast-bench"))
    path = os.path.join(cache, "llama.safetensors")
    if not os.path.exists(path):
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "make_inputs.py"), cache],
                       check=True)
    with open(path, "rb") as f:  # into the page cache
        while f.read(64 << 20):
            pass
    return path


def run(command):
    """Runs one cooperative load; returns the wall seconds and each rank's report."""
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{done.stderr}")
    reports = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return wall, sorted(reports, key=lambda r: r["rank"])


def loopback(cli, path, n):
    return run(["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                "-np", str(n), "--mca", "btl", "tcp,self",
                cli, "load", "--cooperative", "--json", path])


def namespaces(cli, path, n):
    return run([NETNS, "mpirun", PREFIX, SUBNET, str(n),
                cli, "load", "--cooperative", "--json", path])


def main():
    cli = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                          os.path.join(ROOT, "build", "release", "tools", "ballast"))
    path = checkpoint()
    rows = []
    can_netns = os.geteuid() == 0
    for transport, load in (("loopback", loopback), ("netns", namespaces)):
        if transport == "netns" and not can_netns:
            print("netns: skipped (needs root)", file=sys.stderr)
            continue
        for n in (1, 2, 4):
            if transport == "netns":
                subprocess.run([NETNS, "up", PREFIX, str(n), SUBNET], check=True)
            try:
                load(cli, path, n)  # warm-up: Open MPI's start and the first touch of memory
                wall, reports = load(cli, path, n)
            finally:
                if transport == "netns":
                    subprocess.run([NETNS, "down", PREFIX, str(n)], check=True)
            total = sum(r["storage_bytes"] for r in reports)
            rows.append({"transport": transport, "ranks": n, "wall_seconds": round(wall, 3),
                         "load_seconds": round(max(r["seconds"] for r in reports), 3),
                         "storage_bytes": [r["storage_bytes"] for r in reports],
                         "share_of_total": [round(r["storage_bytes"] / total, 4)
                                            for r in reports]})
            print(json.dumps(rows[-1]), flush=True)
    print("\n| transport | N | bytes read per rank (MiB) | share | load s (slowest rank) | "
          "wall s (mpirun) |\n|---|---|---|---|---|---|")
    for r in rows:
        mib = ", ".join(f"{b / 2**20:.1f}" for b in r["storage_bytes"])
        share = ", ".join(f"{s:.3f}" for s in r["share_of_total"])
        print(f"| {r['transport']} | {r['ranks']} | {mib} | {share} | {r['load_seconds']} | "
              f"{r['wall_seconds']} |")


if __name__ == "__main__":
    main()
