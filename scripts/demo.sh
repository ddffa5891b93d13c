#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies, build, then inspect and load the
# bundled default model (models/tiny-llama), showing its tensors and the load speed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target ballast_cli
./build/release/tools/ballast inspect models/tiny-llama
./build/release/tools/ballast load models/tiny-llama
