#!/usr/bin/env bash
# Downloads the wheels the GPU benchmark compares against (InstantTensor, fastsafetensors) into
# .whl/ for a Python 3.12 x86-64 machine that cannot fetch them itself (scripts/gpu_check.sh
# installs them from there). .whl/ is in .gitignore.
set -euo pipefail
cd "$(dirname "$0")/.."
platforms=()
for n in 17 24 27 28 31 34 35; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl \
  instanttensor==0.2.2 fastsafetensors==0.5.0
for w in .whl/*.whl; do
  echo "$w needs:"
  unzip -p "$w" '*/METADATA' | grep ^Requires-Dist | grep -v extra || true
done
