#!/usr/bin/env bash
# Makes the benchmark's own Python environment (requirements/bench.txt, hashed) in
# $BALLAST_BENCH_CACHE/venv, outside the repository, and prints its python. A stamp holding the
# lock's hash means it is reinstalled only when the lock changes. Run by bench/run.sh; never by
# scripts/setup.sh or the tests.
#   bash bench/venv.sh CACHE_FOLDER
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$1/venv
lock=$root/requirements/bench.txt
stamp=$(sha256sum "$lock" | cut -d' ' -f1)
if [[ ! -x $venv/bin/python || $(cat "$venv/.ballast-bench-stamp" 2>/dev/null) != "$stamp" ]]; then
  echo "bench: installing the pinned benchmark packages into $venv (a few GB, once)" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes -r "$lock" >&2
  echo "$stamp" >"$venv/.ballast-bench-stamp"
fi
echo "$venv/bin/python"
