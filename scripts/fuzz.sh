#!/usr/bin/env bash
# The long fuzz run: builds the asan preset's fuzz targets and runs every one for SECONDS
# (default 600), two at a time (FUZZ_JOBS). A failing input is left as crash-*/leak-*/timeout-*
# in build/asan/fuzz/corpus_<target>/; copy it to fuzz/regressions/<target>/ once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
cmake --preset asan
cmake --build --preset asan -j "$(nproc)"
BALLAST_FUZZ_SECONDS="$seconds" ctest --preset asan -L fuzz -j "${FUZZ_JOBS:-2}" --timeout $((seconds + 300))
