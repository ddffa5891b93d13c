#!/usr/bin/env bash
# The Google Benchmark micro-benchmarks (bench/micro/): cast kernels, checkpoint open and an
# owned in-memory load, each reported as a ratio to memcpy measured in the same run. Not part
# of the test run.
#   bash bench/micro.sh [REPETITIONS]   (default 5; repetitions are randomly interleaved)
# Environment: BALLAST_BUILD (default build/release).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BALLAST_BUILD:-$root/build/release}
reps=${1:-5}
[[ -d $build ]] || cmake --preset release -S "$root"
cmake --build "$build" -j2 --target ballast_micro_bench
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$build/bench/micro/ballast_micro_bench" --benchmark_repetitions="$reps" \
  --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
  --benchmark_out="$out" --benchmark_out_format=json >/dev/null
/usr/bin/python3 - "$out" "$reps" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
median = {r["run_name"]: r for r in runs if r.get("aggregate_name") == "median"}
spread = {r["run_name"]: r for r in runs if r.get("aggregate_name") == "cv"}
base = median["BM_memcpy/real_time"]["bytes_per_second"]
print(f"{sys.argv[2]} repetitions, randomly interleaved; medians; memcpy of the same 64 MiB "
      f"between resident buffers: {base / 1e9:.2f} GB/s\n")
print("| benchmark | median ms | cv | GB/s (input) | vs memcpy | items/s |")
print("|---|---|---|---|---|---|")
for name, r in sorted(median.items(), key=lambda kv: (kv[0] != "BM_memcpy/real_time", kv[0])):
    gbs = r.get("bytes_per_second")
    items = r.get("items_per_second")
    cv = spread[name]["real_time"] if name in spread else 0
    print(f"| {name.removesuffix('/real_time')} | {r['real_time']:.3f} | {cv * 100:.0f}% | "
          f"{f'{gbs / 1e9:.2f}' if gbs else ''} | {f'{gbs / base:.2f}x' if gbs else ''} | "
          f"{f'{items / 1e6:.2f} M' if items else ''} |")
PY
