#!/usr/bin/env bash
# The benchmark (docs/benchmark.md, README "Benchmark"): builds what it needs, installs its own
# pinned Python environment (bench/venv.sh) and writes its inputs into a cache folder when
# missing, then measures ballast, its baselines and its peers, interleaved, and writes
# results.json, results.md and results.png. Not part of the test run.
#   bash bench/run.sh [--reps N] [--quick] [--only REGEX]
# Environment: BALLAST_BENCH_CACHE (inputs; default ~/.cache/ballast-bench), BALLAST_BUILD
# (build folder with the ballast binary; default build/release), BALLAST_BENCH_OUT (results;
# default the cache folder).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${BALLAST_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ballast-bench}
build=${BALLAST_BUILD:-$root/build/release}
out=${BALLAST_BENCH_OUT:-$cache}
mkdir -p "$cache" "$out"

if [[ ! -x $build/tools/ballast ]]; then
  [[ -d $build ]] || cmake --preset release -S "$root"
  cmake --build "$build" -j2 --target ballast_cli
fi
# fio (io_uring, qd 32) is the O_DIRECT baseline; Debian packages it. Without it (not root, no
# apt) its rows are left out.
if ! command -v fio >/dev/null && [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  { apt-get install -y -qq fio || { apt-get update -qq && apt-get install -y -qq fio; }; } >/dev/null ||
    echo "bench: could not install fio; its rows are left out" >&2
fi
baseline=$cache/read_baseline
if [[ ! -x $baseline || $root/bench/read_baseline.cpp -nt $baseline ]]; then
  c++ -O2 -std=c++20 -pthread -o "$baseline" "$root/bench/read_baseline.cpp"
fi
# nginx and curl serve and fetch the download rows' file (bench/servers.py).
if [[ ! -x /usr/sbin/nginx || -z $(command -v curl) ]]; then
  echo "bench: the download rows need /usr/sbin/nginx and curl (apt-get install nginx curl)" >&2
  exit 1
fi
python=$(bash "$root/bench/venv.sh" "$cache")
/usr/bin/python3 "$root/bench/make_inputs.py" "$cache"
"$python" "$root/bench/peers/make_inputs.py" "$cache"
exec "$python" "$root/bench/measure.py" --cache "$cache" --ballast "$build/tools/ballast" \
  --baseline "$baseline" --out "$out" --root "$root" "$@"
