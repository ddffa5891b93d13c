"""One timed load through a Python API, ballast's or the reference's, for bench/python_api.py.
Results are touched (one byte per page) so that lazily mapped results are timed reading their
bytes.
  python_api_peer.py {ballast|reference} {torch_load_file|numpy_load_file|safe_open_torch|bin_torch} FILE"""
import sys

from common import clock, report, touch_numpy, touch_torch

impl, case, path = sys.argv[1:4]
if case == "numpy_load_file":
    import ml_dtypes  # noqa: F401  registers bfloat16 with numpy, which BF16 tensors need
if impl == "ballast":
    import ballast
    import ballast.safetensors as st
    import ballast.safetensors.numpy as st_numpy
    import ballast.safetensors.torch as st_torch
else:
    import safetensors as st
    import safetensors.numpy as st_numpy
    import safetensors.torch as st_torch
import torch  # noqa: E402  imported before the clock starts, as by an engine

t = clock()
if case == "torch_load_file":
    report(t, touch_torch(st_torch.load_file(path).values()))
elif case == "numpy_load_file":
    report(t, touch_numpy(st_numpy.load_file(path).values()))
elif case == "safe_open_torch":
    with st.safe_open(path, framework="pt") as f:
        tensors = [f.get_tensor(k) for k in f.keys()]
    report(t, touch_torch(tensors))
elif case == "bin_torch" and impl == "ballast":
    report(t, touch_torch(ballast.Loader().load_checkpoint(path, framework="pt").values()))
elif case == "bin_torch":
    report(t, touch_torch(torch.load(path, weights_only=True, mmap=False).values()))
else:
    sys.exit(f"unknown case {case}")
