#!/usr/bin/env bash
# Installs every Debian package that building and testing ballast needs. Idempotent: when all
# are present it changes nothing and needs no network.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config git clang-format
  nlohmann-json3-dev libcli11-dev libfmt-dev libssl-dev zlib1g-dev libcurl4-openssl-dev
  libgtest-dev libgmock-dev libhwy-dev liburing-dev libbenchmark-dev
  # the asan preset: clang with its sanitizer and libFuzzer runtimes
  clang libclang-rt-14-dev
  # tests: checkpoints written by the real writers
  python3-numpy python3-torch python3-onnx
  # tests: remote sources served on 127.0.0.1 (nginx; Python fault, Hub and S3 servers)
  nginx-light python3-botocore python3-boto3
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
# tests: the S3-compatible server behind the SigV4-checking proxy (npm's s3rver; without it
# the S3 tests skip with a message)
if ! command -v s3rver >/dev/null; then
  if command -v npm >/dev/null && npm install -g --no-audit --no-fund s3rver@3.7.1 >/dev/null; then
    echo "setup: installed s3rver"
  else
    echo "setup: could not install s3rver with npm; the S3 tests will skip"
  fi
fi
echo "setup: all packages present"
