#!/usr/bin/env bash
# Prepares the GPU check (scripts/gpu_check.sh) on a machine without a GPU: builds the CUDA test
# and benchmark binaries here (release preset, CUDA and GPUDirect Storage on) and copies them,
# with the shared libraries they need beyond glibc, into .gpu/ (ignored), so that a GPU machine
# lacking ballast's build dependencies can still run them. The Python package with its _core
# goes to .gpu/python, marked with the Python version it was built for: gpu_check.sh uses it
# only under the same version (a CPython extension's ABI is per minor version; the GPU machine
# may run a newer Python, and then builds _core itself or skips the Python GPU tests). Then copy
# the checkout with .gpu/ and .whl/ (scripts/gpu_wheels.sh fills it) to the GPU machine and run
# `bash scripts/gpu_check.sh` there. Both folders are in .gitignore.
set -euo pipefail
cd "$(dirname "$0")/.."
python=$PWD/.venv/bin/python
[[ -x $python ]] || python=$(command -v python3)
cmake --preset release -DBALLAST_CUDA=ON -DBALLAST_CUFILE=ON -DBALLAST_PYTHON=ON \
  -DPython_EXECUTABLE="$python" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache > /dev/null
targets=(cuda_backend_test device_upload_test device_load_test gpu_load_bench)
# The device kernels' own tests, when the kernels library is in the tree.
mapfile -t kernel_tests < <(ninja -C build/release -t targets all |
  sed -n 's/^\(cuda_kernels_[a-z_]*_test\): .*/\1/p' | sort -u)
cmake --build build/release -j2 --target "${targets[@]}" "${kernel_tests[@]}" _core
rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib
mkdir -p .gpu/python && cp -rL build/release/python/ballast .gpu/python/
"$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' > .gpu/python/PYTHON_VERSION
for t in "${targets[@]}" "${kernel_tests[@]}"; do
  find build/release -name "$t" -type f -perm -u+x -exec cp {} .gpu/bin/ \;
done
# Shared libraries beyond glibc and the C++ runtime (the GPU machine has newer ones of those).
ldd .gpu/bin/* .gpu/python/ballast/_core*.so | awk '/=> \//{print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|librt|libpthread|libresolv|libgcc_s|libstdc\+\+)\.so' |
  xargs -r cp -L -t .gpu/lib
du -sh .gpu
