#!/usr/bin/env bash
# The whole test suite on a fresh machine, as CI runs it: install dependencies, build the asan
# preset (clang, AddressSanitizer + UndefinedBehaviorSanitizer, LeakSanitizer, warnings as
# errors, the libFuzzer targets) and run every test through ctest under it, then every fuzz
# target for a short bounded run (BALLAST_FUZZ_SECONDS, 30 s each). The long fuzz run is
# scripts/fuzz.sh; the concurrency tests under ThreadSanitizer are `ctest --preset tsan`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset asan
cmake --build --preset asan -j "$(nproc)"
ctest --preset asan
