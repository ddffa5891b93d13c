#!/usr/bin/env bash
# The whole test suite on a fresh machine, as CI runs it: install dependencies (Debian packages
# and the pinned PyPI test environment .venv), build the asan preset (clang, AddressSanitizer +
# UndefinedBehaviorSanitizer, LeakSanitizer, warnings as errors, the libFuzzer targets) and run
# through ctest under it every GoogleTest test, the Python suite (tests/python, pytest) and
# every fuzz target for a short bounded run (BALLAST_FUZZ_SECONDS, 30 s each). Prints what each
# phase cost. Before the build, the Python package is built (release, the C++ core included)
# and installed into .venv with `pip install .`, as a user would; the Python suite imports
# that one. The long fuzz run is scripts/fuzz.sh.
#
# `scripts/test.sh --tsan` runs the concurrency tests under ThreadSanitizer instead: after the
# setup it configures the tsan preset, builds only the test executables that the tsan test
# preset runs (the concurrency_tests target) and runs `ctest --preset tsan` (its suppressions,
# for races inside uninstrumented libraries only, are tests/tsan.supp).
set -euo pipefail
cd "$(dirname "$0")/.."

tsan=0
case "${1:-}" in
  "") ;;
  --tsan) tsan=1 ;;
  *)
    echo "usage: scripts/test.sh [--tsan]" >&2
    exit 2
    ;;
esac

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
if ((tsan)); then
  phase configure cmake --preset tsan
  phase build cmake --build --preset tsan -j "$(nproc)" --target concurrency_tests
  phase test ctest --preset tsan
  exit 0
fi
# --no-build-isolation: the build uses .venv's hash-pinned scikit-build-core and nanobind.
phase python .venv/bin/pip install -q --disable-pip-version-check --no-build-isolation \
  --no-deps .
phase configure cmake --preset asan
phase build cmake --build --preset asan -j "$(nproc)"
phase test ctest --preset asan
