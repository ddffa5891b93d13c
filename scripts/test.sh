#!/usr/bin/env bash
# The whole test suite on a fresh machine: install dependencies, build the release preset with
# warnings as errors, and run every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release
cmake --build --preset release -j "$(nproc)"
ctest --preset release
