"""The Python benchmark (issue 25): ballast's Python API against the APIs it stands in for,
on the page-cached benchmark checkpoint (bench/make_inputs.py), in one run. Each load runs in
a fresh interpreter of the bench venv (bench/venv.sh: PyPI torch, safetensors, ml_dtypes),
alternating the two sides; the table gives median seconds, the ratio and peak RSS.
  python3 bench/python_api.py [--runs N] [--cache DIR] [--ballast-path DIR]
--ballast-path: a folder from which `import ballast` works (default: a link to the package
that .venv imports)."""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
PEER = ROOT / "bench" / "peers" / "python_api_peer.py"
CASES = [  # (label, case, input, target)
    ("safetensors.torch.load_file + touch", "torch_load_file", "llama.safetensors", ">= 1.5x"),
    ("safetensors.numpy.load_file + touch", "numpy_load_file", "llama.safetensors", ">= 1.5x"),
    ("safe_open + get_tensor each (torch) + touch", "safe_open_torch", "llama.safetensors",
     ">= 1.0x"),
    ("Loader().load_checkpoint(.bin) vs torch.load + touch", "bin_torch", "llama.bin", ">= 3x"),
]


def ballast_path():
    """A folder holding only a link to the ballast package that .venv imports."""
    found = subprocess.run([str(ROOT / ".venv/bin/python"), "-c",
                            "import ballast, os; print(os.path.dirname(ballast.__file__))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="ballast-bench-"))
    (folder / "ballast").symlink_to(found)
    return folder


def run_once(python, impl, case, path, extra_path):
    env = dict(os.environ, PYTHONPATH=str(extra_path))
    proc = subprocess.Popen([python, str(PEER), impl, case, str(path)], stdout=subprocess.PIPE,
                            text=True, env=env, cwd=PEER.parent)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        sys.exit(f"{impl} {case} failed")
    return json.loads(out.strip().splitlines()[-1])["seconds"], usage.ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cache", default=os.path.expanduser("~/.cache/ballast-bench"))
    parser.add_argument("--ballast-path")
    parser.add_argument("--python", default=os.path.expanduser(
        "~/.cache/ballast-bench/venv/bin/python"))
    args = parser.parse_args()
    extra = pathlib.Path(args.ballast_path) if args.ballast_path else ballast_path()
    print("| load | reference s | ballast s | ratio | target | peak RSS ref / ballast MiB |")
    print("|---|---|---|---|---|---|")
    for label, case, name, target in CASES:
        path = pathlib.Path(args.cache) / name
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # page cache
        times = {"reference": [], "ballast": []}
        rss = {"reference": 0.0, "ballast": 0.0}
        for _ in range(args.runs):
            for impl in times:
                seconds, peak = run_once(args.python, impl, case, path, extra)
                times[impl].append(seconds)
                rss[impl] = max(rss[impl], peak)
        ref, ours = statistics.median(times["reference"]), statistics.median(times["ballast"])
        print(f"| {label} | {ref:.3f} | {ours:.3f} | {ref / ours:.2f}x | {target} | "
              f"{rss['reference']:.0f} / {rss['ballast']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
