"""Runs every benchmark case several times, interleaved (one pass over all cases per
repetition), and reports median seconds, spread (min-max), GB/s, the ratio to the best peer
doing the same work (bench/peer_cases.py) or to the best baseline on the same file, and peak
RSS (/usr/bin/time). Writes results.json, results.md and results.png (bench/report.py).
Invoked by bench/run.sh with the benchmark's environment (bench/venv.sh).

Before every run (warm-up and timed) the case's input is read whole (cat) so every case starts
from the same page-cache state: the input cached. Download rows empty their destination before
every run.

Each timed run follows an untimed run of the same case. In a virtual machine the first touch
of guest memory that the host has not backed yet costs several times a memory copy, so
without the warm-up a case that fills fresh buffers is fast or slow depending on which case
ran before it (measured here: the same 1 GiB load took 0.13 s or 1.1 s by position)."""
import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from types import SimpleNamespace

import peer_cases
import report
from case import Case
from servers import Servers
from timing import dd_seconds, fio_seconds, json_seconds

def size_of(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    return os.path.getsize(path)


def cases(a, c):
    """ballast's modes and the plain-program baselines (bench/case.py), per input file."""
    st, single = f"{c}/llama.safetensors", f"{c}/single_1g.safetensors"
    bal = [a.ballast, "load", "--json"]
    out = []
    for group, path in (("llama.safetensors", st), ("single_1g", single)):
        out.append(Case(group, "dd bs=16M", "baseline", path,
                        ["dd", f"if={path}", "of=/dev/null", "bs=16M"], dd_seconds))
        out.append(Case(group, "read into fresh buffer", "baseline", path, [a.baseline, path],
                        json_seconds))
        # The bound for an owned load: the fastest fresh-memory read (see read_baseline.cpp).
        out.append(Case(group, "read into fresh huge pages, 2 threads", "baseline", path,
                        [a.baseline, path, "--threads", "2"], json_seconds))
        out.append(Case(group, "dd bs=16M iflag=direct", "direct-baseline", path,
                        ["dd", f"if={path}", "of=/dev/null", "bs=16M", "iflag=direct"], dd_seconds))
        out.append(Case(group, "read_baseline O_DIRECT", "direct-baseline", path,
                        [a.baseline, path, "--direct"], json_seconds))
        if shutil.which("fio"):
            for direct in (0, 1):
                out.append(Case(group, f"fio io_uring qd32 direct={direct}",
                                "direct-baseline" if direct else "baseline", path,
                                ["fio", "--name=r", f"--filename={path}", "--rw=read", "--bs=1M",
                                 "--ioengine=io_uring", "--iodepth=32", f"--direct={direct}"],
                                fio_seconds))
        for mode, threads in (("read", 1), ("read", 2), ("io_uring", 2), ("direct", 1),
                              ("direct", 2)):
            out.append(Case(group, f"ballast {mode} t{threads}", "ballast", path,
                            bal + [path, "--mode", mode, "--threads", str(threads)], json_seconds))
        out.append(Case(group, "ballast mmap (pages touched)", "ballast", path,
                        bal + [path, "--mode", "mmap"], json_seconds))
        # Memory the process already faulted in: the median of 3 loads in one process.
        for mode in ("read", "direct"):
            out.append(Case(group, f"ballast {mode} t2, 3 loads in one process", "ballast", path,
                            bal + [path, "--mode", mode, "--threads", "2", "--repeat", "3"],
                            json_seconds))
        # Memory resident before the timing starts (an engine's preallocated host memory):
        # the reads and copies alone, as dd and fio measure them.
        for mode in ("read", "direct"):
            out.append(Case(group, f"ballast {mode} t2, into a pre-faulted arena", "ballast", path,
                            bal + [path, "--mode", mode, "--threads", "2", "--arena"], json_seconds))
    out.append(Case("llama.safetensors", "ballast mmap open (no touch)", "ballast", st,
                    bal + [st, "--mode", "mmap", "--no-touch"], json_seconds))
    out.append(Case("llama.safetensors", "ballast auto", "ballast", st, bal + [st], json_seconds))
    out.append(Case("llama.safetensors", "ballast read + cast bf16->f32", "ballast", st,
                    bal + [st, "--mode", "read", "--dtype", "f32"], json_seconds))
    for group, name in (("scaling: 10x bytes", "single_100m"), ("scaling: 10x bytes", "single_1g"),
                        ("scaling: 10x tensors", "split_320"), ("scaling: 10x tensors",
                                                                "split_3200")):
        path = f"{c}/{name}.safetensors"
        out.append(Case(group, f"ballast read t2 {name}", "ballast", path,
                        bal + [path, "--mode", "read", "--threads", "2"], json_seconds))
    return out


class Missing(Exception):
    """A target's row was left out (--only)."""


def summarize(rows):
    """The issue's targets, computed from the rows; a target whose rows were not run says so."""
    def optional_row(group, case):
        return next((r for r in rows if r["group"] == group and r["case"] == case), None)

    def row(group, case):
        found = optional_row(group, case)
        if found is None:
            raise Missing
        return found

    def best(group, kind):
        return max((r for r in rows if r["group"] == group and r["kind"] == kind),
                   key=lambda r: r["gb_per_s"])

    st = "llama.safetensors"

    def owned_load():
        fresh = [r for r in rows if r["group"] == st and r["case"].startswith("ballast")
                 and ("read t" in r["case"] or "io_uring" in r["case"])
                 and "one process" not in r["case"] and "arena" not in r["case"]]
        if not fresh:
            raise Missing
        owned = max(fresh, key=lambda r: r["gb_per_s"])
        dd = row(st, "dd bs=16M")
        text = (f"{owned['case']}: {owned['gb_per_s']:.2f} GB/s = "
                f"{owned['gb_per_s'] / dd['gb_per_s']:.2f}x dd")
        if bound := optional_row(st, "read into fresh huge pages, 2 threads"):
            text += (f"; {owned['gb_per_s'] / bound['gb_per_s']:.2f}x the fresh-memory bound "
                     f"({bound['case']}: {bound['gb_per_s'] / dd['gb_per_s']:.2f}x dd)")
        if arena := optional_row(st, "ballast read t2, into a pre-faulted arena"):
            text += f"; into a pre-faulted arena {arena['gb_per_s'] / dd['gb_per_s']:.2f}x"
        return text

    def mmap_open():
        return f"{row(st, 'ballast mmap open (no touch)')['median_s'] * 1e3:.1f} ms"

    def torch_bin():
        torch = row(".bin", "torch.load weights_only, mmap=False")
        bal = row(".bin", "ballast read t2 (.bin)")
        return (f"{torch['median_s'] / bal['median_s']:.1f}x; RSS "
                f"{bal['peak_rss_bytes'] / 2**20:.0f} vs {torch['peak_rss_bytes'] / 2**20:.0f} MiB")

    def direct_vs_fio(group):
        # fio's O_DIRECT figure; without fio, the best O_DIRECT baseline that ran.
        base = optional_row(group, "fio io_uring qd32 direct=1") or best(group, "direct-baseline")
        single = max((r for r in rows if r["group"] == group and r["case"] in
                      ("ballast direct t1", "ballast direct t2")), key=lambda r: r["gb_per_s"])
        into = row(group, "ballast direct t2, into a pre-faulted arena")
        return (f"{group}: {single['case']} {single['gb_per_s'] / base['gb_per_s']:.2f}x "
                f"{base['case']}, into a pre-faulted arena "
                f"{into['gb_per_s'] / base['gb_per_s']:.2f}x")

    def direct():
        try:
            return "; ".join(direct_vs_fio(g) for g in (st, "single_1g"))
        except ValueError:  # max() of no rows
            raise Missing

    def bytes_scaling():
        b100 = row("scaling: 10x bytes", "ballast read t2 single_100m")
        b1g = row("scaling: 10x bytes", "ballast read t2 single_1g")
        return (f"{b1g['median_s'] / b100['median_s']:.1f}x "
                f"(bytes {b1g['bytes'] / b100['bytes']:.1f}x)")

    def tensor_scaling():
        t320 = row("scaling: 10x tensors", "ballast read t2 split_320")
        t3200 = row("scaling: 10x tensors", "ballast read t2 split_3200")
        return f"{t3200['median_s'] / t320['median_s']:.2f}x"

    def vs(work, ours, theirs, at_least=1.0):
        """ours against theirs (case names in one work): the ratio and whether it meets at_least."""
        a, b = [next((r for r in rows if r["work"] == work and r["case"] == c), None)
                for c in (ours, theirs)]
        if a is None or b is None:
            raise Missing
        ratio = a["gb_per_s"] / b["gb_per_s"]
        return f"{ratio:.2f}x {theirs} ({'met' if ratio >= at_least else 'NOT met'})"

    def owned_vs_peers():
        ours = "ballast read t2 (safetensors)"
        return "; ".join(vs(peer_cases.OWNED, ours, theirs, need) for theirs, need in (
            ("safetensors load_file (numpy)", 1.5), ("Run:ai streamer, file to CPU", 1.0),
            ("fastsafetensors, CPU (nogds)", 1.0)))

    def every_work():
        parts = []
        for work in dict.fromkeys(r["work"] for r in rows if r["work"]):
            mine = [r for r in rows if r["work"] == work and r["kind"] == "ballast"]
            theirs = [r for r in rows if r["work"] == work and r["kind"] == "peer"]
            if mine and theirs:
                a, b = (max(x, key=lambda r: r["gb_per_s"]) for x in (mine, theirs))
                ratio = a["gb_per_s"] / b["gb_per_s"]
                parts.append(f"{work}: {ratio:.2f}x {b['case']}"
                             f"{'' if ratio >= 1 else ' (peer ahead)'}")
        if not parts:
            raise Missing
        return "; ".join(parts)

    targets = {}
    for name, measure in (
            ("owned load >= 1.5x safetensors load_file, ahead of Run:ai and fastsafetensors",
             owned_vs_peers),
            ("S3 load from moto ahead of the Run:ai streamer", lambda: vs(
                peer_cases.S3_LOAD, "ballast load --no-cache s3://", "Run:ai streamer, S3 to CPU")),
            ("ballast fetch ahead of hf_hub_download", lambda: vs(
                peer_cases.HUB_DOWNLOAD, "ballast fetch hf://", "huggingface_hub hf_hub_download")),
            ("ballast fetch >= 0.9x curl", lambda: vs(
                peer_cases.HTTP_DOWNLOAD, "ballast fetch", "curl -o", 0.9)),
            ("ballast ahead on every work a peer does (best of each)", every_work),
            ("owned safetensors load >= 0.9x dd", owned_load),
                          ("mmap open < 5 ms", mmap_open),
                          (".bin >= 3x torch.load, lower RSS", torch_bin),
                          ("O_DIRECT >= 0.9x fio io_uring qd32", direct),
                          ("10x bytes <= ~10x time", bytes_scaling),
                          ("10x tensors <= 1.2x time", tensor_scaling)):
        try:
            targets[name] = measure()
        except Missing:
            targets[name] = "not measured (its cases were left out)"
    return targets


def cat(path):
    """Reads path (a file or a folder's files) whole: it is then in the page cache."""
    files = ([os.path.join(path, f) for f in sorted(os.listdir(path))] if os.path.isdir(path)
             else [path])
    subprocess.run(["cat"] + files, stdout=subprocess.DEVNULL, check=True)


def run(case):
    cat(case.path)
    if case.prepare:
        case.prepare()
    return case.parse(case.cmd)


def selected(todo, only):
    return [t for t in todo if not only or re.search(only, f"{t.group} | {t.name}")]


def measure(todo, reps, warmup):
    samples = {i: [] for i in range(len(todo))}
    for rep in range(reps):
        print(f"bench: repetition {rep + 1}/{reps}", file=sys.stderr)
        for i, case in enumerate(todo):
            if warmup:
                run(case)  # untimed warm-up: see the module docstring
            samples[i].append(run(case))
            if case.prepare:
                case.prepare()  # leave no download behind in memory
    return samples


def rows_of(todo, samples):
    rows = []
    for i, c in enumerate(todo):
        secs = [s for s, _, _ in samples[i]]
        med = statistics.median(secs)
        nbytes = c.nbytes or size_of(c.path)
        rows.append({"group": c.group, "case": c.name, "kind": c.kind, "work": c.work,
                     "bytes": nbytes, "median_s": med, "min_s": min(secs), "max_s": max(secs),
                     "gb_per_s": nbytes / med / 1e9,
                     "peak_rss_bytes": max(r for _, r, _ in samples[i]), "samples_s": secs,
                     "median_cpu_s": statistics.median(c for _, _, c in samples[i]),
                     "command": c.cmd})
    for r in rows:  # ratio to the best baseline on the same file (O_DIRECT: direct baselines)
        want = "direct-baseline" if " direct" in r["case"] and r["kind"] == "ballast" else "baseline"
        best = [b["gb_per_s"] for b in rows if not r["work"] and b["kind"] == want
                and b["bytes"] == r["bytes"] and b["group"] == r["group"]]
        r["ratio_to_best_baseline"] = r["gb_per_s"] / max(best) if best else None
    for r in rows:  # ratio to the best peer doing the same work
        best = [p["gb_per_s"] for p in rows if r["work"] and p["work"] == r["work"]
                and p["kind"] == "peer"]
        r["ratio_to_best_peer"] = r["gb_per_s"] / max(best) if best else None
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", required=True)
    ap.add_argument("--ballast", required=True)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--root", required=True, help="the repository (peer drivers, Hub stand-in)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 repetitions")
    ap.add_argument("--no-warmup", action="store_true", help="skip the untimed run before each")
    ap.add_argument("--only", metavar="REGEX",
                    help="run only the cases whose 'input | case' matches (a focused A/B run)")
    a = ap.parse_args()
    reps = 2 if a.quick else a.reps
    python = sys.executable  # the benchmark's environment runs the peers too
    todo = selected(cases(a, a.cache) +
                    peer_cases.local_cases(a.ballast, python, a.cache, a.root), a.only)
    # The remote rows' names do not depend on the servers' addresses: select them before
    # starting the servers, which only run when a remote row is selected.
    no_servers = SimpleNamespace(http_url="", s3_url="", hub_url="", hub_resolve_url="")
    want_remote = selected(peer_cases.remote_cases(a.ballast, python, a.cache, a.root,
                                                   no_servers), a.only)
    with contextlib.ExitStack() as stack:
        if want_remote:
            servers = stack.enter_context(Servers(
                f"{a.cache}/llama.safetensors", f"{a.cache}/{peer_cases.S3_OBJECT}", python, a.root))
            todo += selected(peer_cases.remote_cases(a.ballast, python, a.cache, a.root,
                                                     servers), a.only)
        if not todo:
            sys.exit(f"bench: no case matches --only {a.only!r}")
        rows = rows_of(todo, measure(todo, reps, not a.no_warmup))
    targets = summarize(rows)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"repetitions": reps, "cpus": os.cpu_count(), "rows": rows,
                   "targets": targets, "not_run": peer_cases.NOT_RUN}, f, indent=1)
    preamble = (f"{reps} repetitions, interleaved, each after an untimed warm-up run "
                f"({'off' if a.no_warmup else 'on'}); {os.cpu_count()} CPUs; every input read "
                "whole (page-cached) before every run, except O_DIRECT rows. Seconds are the "
                "tool's own timing (ballast: open, parse and load; Python peers: the load call; "
                "curl: time_total; ballast fetch: the whole process); CPU s covers the whole "
                "process.")
    text = report.write(a.out, rows, targets, peer_cases.NOT_RUN, preamble,
                        f"ballast and its peers, GB/s ({reps} reps, {os.cpu_count()} CPUs)")
    print(text)


if __name__ == "__main__":
    main()
