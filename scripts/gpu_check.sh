#!/usr/bin/env bash
# The GPU check of the CUDA backend (docs/gpu.md), one call of at most 8 minutes on a machine
# with a CUDA device; results go to $OUT (check.log, gpu_bench.json, gpu_peers.json, summary.md):
#   1. binaries: built here with CUDA when the machine has ballast's build dependencies, else
#      the ones scripts/gpu_prepare.sh carried in .gpu/;
#   2. the GPU tests (cuda_backend_test, the pipeline's tests, the kernels' tests) and
#      compute-sanitizer memcheck on a subset;
#   3. the Python GPU tests (tests/python/test_python_cuda.py) with a ballast._core built for
#      this machine's Python: built here, or carried in .gpu/python when its Python version
#      matches; otherwise they are skipped, and said so (an extension's ABI is per Python);
#   4. a page-cached ~4 GiB checkpoint: GB/s into device memory for ballast (page cache,
#      io_uring, O_DIRECT, bf16 -> f32 / fp8 casts on the device, GPUDirect Storage through
#      cuFile) vs one cudaMemcpy from pinned memory of the same bytes
#      (bench/gpu/gpu_load_bench), and vs safetensors, torch.load, InstantTensor and
#      fastsafetensors (bench/gpu/gpu_peers.py; the last two from .whl/).
# libcufile comes from python3's nvidia packages (PyTorch's CUDA wheels bring nvidia-cufile);
# without the nvidia-fs module cuFile runs in its compatibility mode, which the output says.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
OUT=${OUT:-$root/gpu-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/check.log") 2>&1
export PYTHONUNBUFFERED=1
step() { echo "== $* ($(date +%T))"; }

step "device"
nvidia-smi -L || { echo "no GPU here"; exit 1; }

step "cuFile"
# libcufile's lib folder and cufile.h's folder among python3's nvidia packages ("-": none).
read -r cufile_lib cufile_inc < <(python3 - <<'PY'
import glob, os
try:
    import nvidia
    dirs = list(nvidia.__path__)
except ImportError:
    dirs = []
def first(pattern):
    hits = sorted(h for d in dirs for h in glob.glob(os.path.join(d, "*", pattern)))
    return os.path.dirname(hits[0]) if hits else "-"
print(first("lib/libcufile.so.0"), first("include/cufile.h"))
PY
)
cufile_lib=${cufile_lib:--} cufile_inc=${cufile_inc:--}
if [[ $cufile_lib == - ]]; then
  echo "no libcufile in python3's nvidia packages: the GDS test skips and the GDS row says so"
else
  echo "libcufile: $cufile_lib"
fi
if [[ -d /proc/driver/nvidia-fs ]]; then
  echo "nvidia-fs is loaded: cuFile reads by DMA from storage into device memory (GDS)"
else
  echo "nvidia-fs is not loaded: cuFile runs in its compatibility mode (POSIX reads into its own"
  echo "buffers, then a copy), so the GDS row measures that mode, not GDS DMA"
  export CUFILE_FORCE_COMPAT_MODE=true
fi
export CUFILE_LOGFILE_PATH=$OUT/cufile.log

step "build"
bin="" pypath=""
targets="cuda_backend_test device_upload_test device_load_test gpu_load_bench"
cufile_flags=()
[[ $cufile_inc != - ]] && cufile_flags=(-DBALLAST_CUFILE_INCLUDE_DIR="$cufile_inc")
configure() {
  timeout 60 cmake --preset release -DBALLAST_CUDA=ON "${cufile_flags[@]}" "$@" \
    > /tmp/configure.log 2>&1
}
# With the Python module when this python3 has nanobind, else without it.
if { configure -DBALLAST_PYTHON=ON -DPython_EXECUTABLE="$(command -v python3)" ||
     configure -DBALLAST_PYTHON=OFF; } &&
   timeout 200 cmake --build build/release -j"$(nproc)" --target $targets > /tmp/build.log 2>&1; then
  bin=build/release/tests
  cp build/release/bench/gpu/gpu_load_bench "$bin/"
  # _core for this machine's Python (the one .gpu/ may carry is for the preparing machine's).
  if timeout 90 cmake --build build/release -j"$(nproc)" --target _core > /tmp/build_core.log 2>&1
  then
    pypath=$root/build/release/python
  else
    tail -5 /tmp/build_core.log
    echo "ballast._core did not build here (see above)"
  fi
  for t in $(ninja -C build/release -t targets all | sed -n 's/^\(cuda_kernels_[a-z_]*_test\): .*/\1/p'); do
    cmake --build build/release -j"$(nproc)" --target "$t" > /dev/null 2>&1
  done
  echo "built here with CUDA"
elif [[ -d .gpu/bin ]]; then
  tail -5 /tmp/configure.log /tmp/build.log 2>/dev/null
  bin=.gpu/bin
  export LD_LIBRARY_PATH=$root/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "no build here (see above): using the binaries of scripts/gpu_prepare.sh"
else
  tail -20 /tmp/configure.log /tmp/build.log 2>/dev/null
  echo "no build and no .gpu/ carried: run scripts/gpu_prepare.sh first"; exit 1
fi

# libcufile findable from here on (the GPU tests, the benchmark), after .gpu/lib.
[[ $cufile_lib != - ]] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$cufile_lib

step "GPU tests"
failed=0
for t in "$bin"/cuda_backend_test "$bin"/device_upload_test "$bin"/device_load_test \
         "$bin"/cuda_kernels_*_test; do
  [[ -x $t ]] || continue
  timeout 120 "$t" --gtest_brief=1 || { echo "FAILED: $t"; failed=1; }
done

step "compute-sanitizer memcheck"
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 "$bin/cuda_backend_test" \
  --gtest_filter='*Arena*:*Capabilities*' --gtest_brief=1 || { echo "FAILED: memcheck"; failed=1; }
if [[ -x $bin/cuda_kernels_device_test ]]; then
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 "$bin/cuda_kernels_device_test" \
    --gtest_filter='*Cast*:*Strided*' --gtest_brief=1 || { echo "FAILED: memcheck (kernels)"; failed=1; }
fi

step "Python GPU tests"
pyver=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
carried=$(cat .gpu/python/PYTHON_VERSION 2>/dev/null || echo none)
if [[ -z $pypath && $carried == "$pyver" ]]; then
  pypath=$root/.gpu/python
  [[ ${LD_LIBRARY_PATH:-} == *"$root/.gpu/lib"* ]] ||
    export LD_LIBRARY_PATH=$root/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
if [[ -z $pypath ]]; then
  echo "SKIPPED: the Python GPU tests and the ballast_python row: no ballast._core for this"
  echo "machine's Python $pyver (no build here; .gpu/python holds one for Python $carried, and a"
  echo "CPython extension's ABI differs between minor versions)"
elif ! python3 -c 'import pytest' 2> /dev/null; then
  echo "SKIPPED: the Python GPU tests: python3 has no pytest"
else
  BALLAST_PYTHONPATH=$pypath timeout 60 python3 -m pytest -q -p no:cacheprovider \
    tests/python/test_python_cuda.py || { echo "FAILED: Python GPU tests"; failed=1; }
fi

step "checkpoint"
ckpt=/tmp/gpu_check/model.safetensors
mkdir -p /tmp/gpu_check
python3 bench/gpu/make_checkpoint.py "$ckpt" 4
cat "$ckpt" > /dev/null  # page-cache it

step "ballast vs the pinned cudaMemcpy bound"
timeout 150 "$bin/gpu_load_bench" "$ckpt" --threads 16 --staging $((256 << 20)) --runs 3 \
  > "$OUT/gpu_bench.json" && cat "$OUT/gpu_bench.json"

step "peers"
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && pypath=${pypath:+$pypath:}/tmp/site
fi
PYTHONPATH=$pypath${PYTHONPATH:+:$PYTHONPATH} timeout 200 python3 bench/gpu/gpu_peers.py "$ckpt" 2 \
  > "$OUT/gpu_peers.json"

step "cooperative load over NCCL"
# tests/cooperative_device_test: mpirun -np <GPUs> ranks over NCCL, one GPU each (one GPU: one
# rank), against one-process loads; needs this machine's build (MPI, NCCL) and mpirun.
if ! command -v mpirun > /dev/null; then
  echo "skipped: no mpirun here"
elif [[ $bin == build/release/tests ]] &&
     timeout 90 cmake --build build/release -j"$(nproc)" \
       --target cooperative_device_test cooperative_device_rank > /tmp/build_coop.log 2>&1; then
  timeout 60 "$bin/cooperative_device_test" --gtest_filter='*Nccl*' ||
    { echo "FAILED: cooperative load over NCCL"; failed=1; }
else
  tail -5 /tmp/build_coop.log 2>/dev/null
  echo "skipped: cooperative_device_test is not built here (needs MPI and NCCL)"
fi

step "summary"
python3 - "$OUT" <<'PY' | tee "$OUT/summary.md"
import json, sys
out = sys.argv[1]
def read(name):
    try:
        return json.load(open(f"{out}/{name}"))
    except Exception as e:
        return {"error": str(e)}
b, p = read("gpu_bench.json"), read("gpu_peers.json")
print(f"# GPU check on {p.get('device', '?')}\n")
print(f"bound (one cudaMemcpy from pinned memory): {b.get('bound_pinned_memcpy_gbps', 0):.1f} GB/s\n")
print("| loader | GB/s | x bound | note |\n| --- | --- | --- | --- |")
for k in ("ballast_page_cache", "ballast_io_uring", "ballast_o_direct", "ballast_gds",
          "ballast_cast_bf16_f32", "ballast_cast_bf16_fp8"):
    r = b.get(k, {})
    note = f"cast costs {r['cost_over_plain']:+.0%} over the plain load" if "cost_over_plain" in r else ""
    if k == "ballast_gds":
        note = "; ".join(x for x in (r.get("mode", ""), r.get("error", "")) if x)
    print(f"| {k} | {r.get('gbps', 0):.1f} | {r.get('ratio_to_bound', 0):.2f} | {note} |")
for k in ("safetensors", "torch_load", "instanttensor", "fastsafetensors", "ballast_python"):
    r = p.get(k, {})
    print(f"| {k} | {r.get('gbps', 0):.1f} | {r.get('ratio_to_bound', 0):.2f} | {r.get('error', '')} |")
print(f"\npeak pinned staging: {b.get('peak_pinned_bytes')} bytes of a {b.get('staging_bytes')}-byte "
      f"budget (within: {b.get('peak_pinned_within_budget')})")
PY
exit $failed
