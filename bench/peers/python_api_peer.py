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

# Each case keeps its result alive until the time is reported: an engine keeps its weights, and
# freeing them (unmapping or freeing 1 GiB) is not part of loading.
t = clock()
if case == "torch_load_file":
    result = st_torch.load_file(path)
    report(t, touch_torch(result.values()))
elif case == "numpy_load_file":
    result = st_numpy.load_file(path)
    report(t, touch_numpy(result.values()))
elif case == "safe_open_torch":
    with st.safe_open(path, framework="pt") as f:
        result = [f.get_tensor(k) for k in f.keys()]
    report(t, touch_torch(result))
elif case == "bin_torch" and impl == "ballast":
    result = ballast.Loader().load_checkpoint(path, framework="pt")
    report(t, touch_torch(result.values()))
elif case == "bin_torch":
    result = torch.load(path, weights_only=True, mmap=False)
    report(t, touch_torch(result.values()))
else:
    sys.exit(f"unknown case {case}")
