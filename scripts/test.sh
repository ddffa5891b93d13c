#!/usr/bin/env bash
# The whole test suite on a fresh machine, as CI runs it: install dependencies (Debian packages
# and the pinned PyPI test environment .venv), build the asan preset (clang, AddressSanitizer +
# UndefinedBehaviorSanitizer, LeakSanitizer, warnings as errors, the libFuzzer targets) and run
# through ctest under it every GoogleTest test, the Python suite (tests/python, pytest) and
# every fuzz target for a short bounded run (BALLAST_FUZZ_SECONDS, 30 s each). Prints what each
# phase cost. Before the build, the Python package is built (release, the C++ core included)
# and installed into .venv with `pip install .`, as a user would; the Python suite imports
# that one. The long fuzz run is scripts/fuzz.sh; the concurrency tests under
# ThreadSanitizer are `ctest --preset tsan`.
set -euo pipefail
cd "$(dirname "$0")/.."

phases=()
phase() {  # phase NAME COMMAND...: runs the command and records its wall time
  local name=$1 start=$SECONDS
  shift
  "$@"
  phases+=("$(printf '%-10s %5d s' "$name" $((SECONDS - start)))")
}
report() {
  echo "test.sh: time per phase"
  for p in "${phases[@]}"; do echo "  $p"; done
}
trap report EXIT

phase setup bash scripts/setup.sh
# --no-build-isolation: the build uses .venv's hash-pinned scikit-build-core and nanobind.
phase python .venv/bin/pip install -q --disable-pip-version-check --no-build-isolation \
  --no-deps .
phase configure cmake --preset asan
phase build cmake --build --preset asan -j "$(nproc)"
phase test ctest --preset asan
