#!/usr/bin/python3
"""Runs every benchmark case several times, interleaved (one pass over all cases per
repetition), and reports median seconds, spread (min-max), GB/s of the input bytes, the ratio
to the best baseline on the same file and peak RSS (/usr/bin/time). Writes results.json and
results.md. Invoked by bench/run.sh.

Each timed run follows an untimed run of the same case. In a virtual machine the first touch
of guest memory that the host has not backed yet costs several times a memory copy, so
without the warm-up a case that fills fresh buffers is fast or slow depending on which case
ran before it (measured here: the same 1 GiB load took 0.13 s or 1.1 s by position)."""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

TORCH_LOAD = """
import sys, time, torch
t = time.perf_counter()
state = torch.load(sys.argv[1], map_location="cpu", weights_only=True)
n = sum(v.numel() * v.element_size() for v in state.values())
print('{"seconds": %f, "bytes": %d}' % (time.perf_counter() - t, n))
"""

NUMPY_LOAD = """
import os, sys, time, numpy
t = time.perf_counter()
arrays = [numpy.load(os.path.join(sys.argv[1], f)) for f in sorted(os.listdir(sys.argv[1]))]
n = sum(a.nbytes for a in arrays)
print('{"seconds": %f, "bytes": %d}' % (time.perf_counter() - t, n))
"""


def size_of(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    return os.path.getsize(path)


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


def cases(a, c):
    """(group, name, kind, file, command, parser). kind: baseline, ballast or peer."""
    st, single = f"{c}/llama.safetensors", f"{c}/single_1g.safetensors"
    bal = [a.ballast, "load", "--json"]
    out = []
    for group, path in (("llama.safetensors", st), ("single_1g", single)):
        out.append((group, "dd bs=16M", "baseline", path,
                    ["dd", f"if={path}", "of=/dev/null", "bs=16M"], dd_seconds))
        out.append((group, "read into fresh buffer", "baseline", path, [a.baseline, path],
                    json_seconds))
        # The bound for an owned load: the fastest fresh-memory read (see read_baseline.cpp).
        out.append((group, "read into fresh huge pages, 2 threads", "baseline", path,
                    [a.baseline, path, "--threads", "2"], json_seconds))
        out.append((group, "dd bs=16M iflag=direct", "direct-baseline", path,
                    ["dd", f"if={path}", "of=/dev/null", "bs=16M", "iflag=direct"], dd_seconds))
        out.append((group, "read_baseline O_DIRECT", "direct-baseline", path,
                    [a.baseline, path, "--direct"], json_seconds))
        if shutil.which("fio"):
            for direct in (0, 1):
                out.append((group, f"fio io_uring qd32 direct={direct}",
                            "direct-baseline" if direct else "baseline", path,
                            ["fio", "--name=r", f"--filename={path}", "--rw=read", "--bs=1M",
                             "--ioengine=io_uring", "--iodepth=32", f"--direct={direct}"],
                            fio_seconds))
        for mode, threads in (("read", 1), ("read", 2), ("io_uring", 2), ("direct", 1),
                              ("direct", 2)):
            out.append((group, f"ballast {mode} t{threads}", "ballast", path,
                        bal + [path, "--mode", mode, "--threads", str(threads)], json_seconds))
        out.append((group, "ballast mmap (pages touched)", "ballast", path,
                    bal + [path, "--mode", "mmap"], json_seconds))
        # Memory the process already faulted in: the median of 3 loads in one process.
        for mode in ("read", "direct"):
            out.append((group, f"ballast {mode} t2, 3 loads in one process", "ballast", path,
                        bal + [path, "--mode", mode, "--threads", "2", "--repeat", "3"],
                        json_seconds))
        # Memory resident before the timing starts (an engine's preallocated host memory):
        # the reads and copies alone, as dd and fio measure them.
        for mode in ("read", "direct"):
            out.append((group, f"ballast {mode} t2, into a pre-faulted arena", "ballast", path,
                        bal + [path, "--mode", mode, "--threads", "2", "--arena"], json_seconds))
    out.append(("llama.safetensors", "ballast mmap open (no touch)", "ballast", st,
                bal + [st, "--mode", "mmap", "--no-touch"], json_seconds))
    out.append(("llama.safetensors", "ballast auto", "ballast", st, bal + [st], json_seconds))
    out.append(("llama.safetensors", "ballast read + cast bf16->f32", "ballast", st,
                bal + [st, "--mode", "read", "--dtype", "f32"], json_seconds))
    binf = f"{c}/llama.bin"
    out.append(("llama.bin", "torch.load", "peer", binf,
                ["/usr/bin/python3", "-c", TORCH_LOAD, binf], json_seconds))
    for mode in ("read", "auto"):
        out.append(("llama.bin", f"ballast {mode}", "ballast", binf, bal + [binf, "--mode", mode],
                    json_seconds))
    npy = f"{c}/llama_npy"
    out.append(("llama_npy", "numpy.load", "peer", npy,
                ["/usr/bin/python3", "-c", NUMPY_LOAD, npy], json_seconds))
    out.append(("llama_npy", "ballast read", "ballast", npy, bal + [npy, "--mode", "read"],
                json_seconds))
    gguf = f"{c}/llama.gguf"
    out.append(("llama.gguf", "ballast read", "ballast", gguf, bal + [gguf, "--mode", "read"],
                json_seconds))
    out.append(("llama.gguf", "ballast mmap (pages touched)", "ballast", gguf,
                bal + [gguf, "--mode", "mmap"], json_seconds))
    for group, name in (("scaling: 10x bytes", "single_100m"), ("scaling: 10x bytes", "single_1g"),
                        ("scaling: 10x tensors", "split_320"), ("scaling: 10x tensors",
                                                                "split_3200")):
        path = f"{c}/{name}.safetensors"
        out.append((group, f"ballast read t2 {name}", "ballast", path,
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
        torch, bal = row("llama.bin", "torch.load"), row("llama.bin", "ballast read")
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

    targets = {}
    for name, measure in (("owned safetensors load >= 0.9x dd", owned_load),
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", required=True)
    ap.add_argument("--ballast", required=True)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 repetitions")
    ap.add_argument("--no-warmup", action="store_true", help="skip the untimed run before each")
    ap.add_argument("--only", metavar="REGEX",
                    help="run only the cases whose 'input | case' matches (a focused A/B run)")
    a = ap.parse_args()
    reps = 2 if a.quick else a.reps
    todo = cases(a, a.cache)
    if a.only:
        todo = [t for t in todo if re.search(a.only, f"{t[0]} | {t[1]}")]
        if not todo:
            sys.exit(f"bench: no case matches --only {a.only!r}")
    for path in sorted({t[3] for t in todo}):  # page-cache every input once
        subprocess.run(["cat"] + ([os.path.join(path, f) for f in os.listdir(path)]
                                  if os.path.isdir(path) else [path]),
                       stdout=subprocess.DEVNULL, check=True)
    samples = {i: [] for i in range(len(todo))}
    for rep in range(reps):
        print(f"bench: repetition {rep + 1}/{reps}", file=sys.stderr)
        for i, (_, _, _, _, cmd, parse) in enumerate(todo):
            if not a.no_warmup:
                parse(cmd)  # untimed warm-up: see the module docstring
            samples[i].append(parse(cmd))
    rows = []
    for i, (group, name, kind, path, cmd, _) in enumerate(todo):
        secs = [s for s, _, _ in samples[i]]
        med = statistics.median(secs)
        rows.append({"group": group, "case": name, "kind": kind, "bytes": size_of(path),
                     "median_s": med, "min_s": min(secs), "max_s": max(secs),
                     "gb_per_s": size_of(path) / med / 1e9,
                     "peak_rss_bytes": max(r for _, r, _ in samples[i]), "samples_s": secs,
                     "median_cpu_s": statistics.median(c for _, _, c in samples[i]),
                     "command": cmd})
    for r in rows:  # ratio to the best baseline on the same file (O_DIRECT: direct baselines)
        want = "direct-baseline" if " direct" in r["case"] and r["kind"] == "ballast" else "baseline"
        best = [b["gb_per_s"] for b in rows
                if b["kind"] == want and b["bytes"] == r["bytes"] and b["group"] == r["group"]]
        r["ratio_to_best_baseline"] = r["gb_per_s"] / max(best) if best else None
    for r in rows:  # speed-up over the peer (torch.load, numpy.load) on the same input
        peer = [p for p in rows if p["kind"] == "peer" and p["group"] == r["group"]]
        r["speedup_vs_peer"] = (peer[0]["median_s"] / r["median_s"]
                                if peer and r["kind"] == "ballast" else None)
    targets = summarize(rows)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"repetitions": reps, "cpus": os.cpu_count(), "rows": rows,
                   "targets": targets}, f, indent=1)
    lines = [f"{reps} repetitions, interleaved, each after an untimed warm-up run "
             f"({'off' if a.no_warmup else 'on'}); {os.cpu_count()} CPUs; page-cached inputs "
             "except O_DIRECT rows. Seconds are the tool's own timing (ballast: open, parse and "
             "load; python peers: the load call); CPU s covers the whole process.", "",
             "| input | case | median s | spread s | GB/s | vs best baseline | vs peer | "
             "CPU s (process) | peak RSS MiB |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{r['ratio_to_best_baseline']:.2f}x" if r["ratio_to_best_baseline"] else ""
        peer = f"{r['speedup_vs_peer']:.1f}x" if r["speedup_vs_peer"] else ""
        lines.append(f"| {r['group']} | {r['case']} | {r['median_s']:.4f} | "
                     f"{r['min_s']:.4f}-{r['max_s']:.4f} | {r['gb_per_s']:.2f} | {ratio} | "
                     f"{peer} | {r['median_cpu_s']:.2f} | {r['peak_rss_bytes'] / 2**20:.0f} |")
    lines += ["", "| target | measured |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in targets.items()]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
