#!/usr/bin/env bash
# The main job on a fresh machine: install what building and running need (not the test
# suite's packages), build the library and the CLI (the `app` preset: release, no tests), then
# inspect and load the bundled default model (models/tiny-llama), showing its tensors and the
# load speed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --build
cmake --preset app >/dev/null
cmake --build --preset app -j "$(nproc)"
./build/app/tools/ballast inspect models/tiny-llama
./build/app/tools/ballast load models/tiny-llama
