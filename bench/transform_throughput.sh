#!/usr/bin/env bash
# Load + transform throughput: generates (once, in DIR, default /tmp/ballast-bench-transforms)
# 1 GiB safetensors files of 4096 x 4096 tensors in f32, bf16 and f16, then times
# `ballast load --mode read --threads 2 FILE --transform STEPS` for a plain load and each step,
# interleaved, median of REPS, in GB/s of output bytes.
# Usage: bench/transform_throughput.sh [REPS] [DIR]   (build the release preset first)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
dir=${2:-/tmp/ballast-bench-transforms}
ballast=build/release/tools/ballast
[ -x "$ballast" ] || { echo "build the release preset first" >&2; exit 1; }
mkdir -p "$dir"
/usr/bin/python3 - "$dir" <<'PY'
import json, os, struct, sys, numpy as np
out = sys.argv[1]
rng = np.random.default_rng(0)
for dtype, tag, count in (("F32", "f32", 16), ("BF16", "bf16", 32), ("F16", "f16", 32)):
    path = f"{out}/{tag}.safetensors"
    if os.path.exists(path): continue
    n = 4096 * 4096
    header, off = {}, 0
    nbytes = n * (4 if tag == "f32" else 2)
    for i in range(count):
        header[f"layer.{i:02d}.weight"] = {"dtype": dtype, "shape": [4096, 4096], "data_offsets": [off, off + nbytes]}
        off += nbytes
    h = json.dumps(header).encode(); h += b" " * (-len(h) % 8)
    x = rng.standard_normal(n).astype(np.float32)
    if tag == "f32": blob = x.tobytes()
    elif tag == "f16": blob = x.astype(np.float16).tobytes()
    else: blob = (x.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for _ in range(count): f.write(blob)
    os.rename(path + ".tmp", path)
PY
cases=(
  "f32|" "bf16|" "bf16|cast:f32" "f16|cast:f32" "f32|cast:bf16" "f32|cast:f16"
  "f32|transpose:0:1" "bf16|transpose:0:1,cast:f32" "f32|quantize:int8" "f32|quantize:int4:128"
)
declare -A rates
for _ in $(seq "$reps"); do
  for c in "${cases[@]}"; do
    file="$dir/${c%%|*}.safetensors"; steps=${c#*|}
    cat "$file" > /dev/null
    args=(load --mode read --threads 2 --json "$file")
    [ -n "$steps" ] && args+=(--transform "$steps")
    r=$("$ballast" "${args[@]}" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["gb_per_s"])')
    rates[$c]+="$r"$'\n'
  done
done
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '| input | steps | GB/s of output (median of %s) | min | max |\n|---|---|---:|---:|---:|\n' "$reps"
for c in "${cases[@]}"; do
  v=$(printf '%s' "${rates[$c]}" | sort -g)
  printf '| %s | %s | %.2f | %.2f | %.2f |\n' "${c%%|*}" "${c#*|}" \
    "$(printf '%s\n' "$v" | median)" "$(printf '%s\n' "$v" | head -1)" "$(printf '%s\n' "$v" | tail -1)"
done
