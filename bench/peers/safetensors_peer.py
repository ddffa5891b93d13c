"""safetensors 0.8.0 (the reference reader): load_file into numpy arrays (copies in memory), or
into torch tensors, or safe_open + get_tensor of each name. Its torch tensors are views of a
private mapping of the file (untouched until read), so for them every page is touched after
the call.
  safetensors_peer.py {load_file_numpy|load_file_torch|safe_open_torch} FILE"""
import sys

from common import clock, report, touch_numpy, touch_torch

mode, path = sys.argv[1], sys.argv[2]
if mode == "load_file_numpy":
    import ml_dtypes  # noqa: F401  registers bfloat16 with numpy, which BF16 tensors need
    from safetensors.numpy import load_file

    t = clock()
    arrays = load_file(path)
    report(t, touch_numpy(arrays.values()))
elif mode == "load_file_torch":
    from safetensors.torch import load_file

    t = clock()
    tensors = load_file(path)
    report(t, touch_torch(tensors.values()))
elif mode == "safe_open_torch":
    from safetensors import safe_open

    t = clock()
    with safe_open(path, framework="pt") as f:
        tensors = [f.get_tensor(k) for k in f.keys()]
    report(t, touch_torch(tensors))
else:
    sys.exit(f"unknown mode {mode}")
