"""Loads to a CUDA device from Python: device names as safetensors takes them, the clear error
without a GPU, and (on a machine with one and torch) CUDA tensors through DLPack with no copy,
equal to the CPU load, and ballast.safetensors' device="cuda:0" equal to the package's."""
import numpy as np
import pytest

from conftest import import_ballast

ballast = import_ballast()
import ballast.safetensors.numpy as ours_np  # noqa: E402
from ballast.safetensors._open import cuda_device  # noqa: E402


def has_cuda_torch():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def cuda_devices():
    return ballast.Loader().capabilities().get("devices", [])


@pytest.fixture
def checkpoint(tmp_path):
    path = tmp_path / "m.safetensors"
    tensors = {"w": np.arange(24, dtype=np.float32).reshape(4, 6), "b": np.ones(5, np.float16),
               "empty": np.zeros((0, 3), np.float32)}
    ours_np.save_file(tensors, str(path))
    return str(path), tensors


def test_device_names_as_safetensors_takes_them():
    assert cuda_device("cuda") == "cuda:0"
    assert cuda_device("cuda:3") == "cuda:3"
    assert cuda_device(2) == "cuda:2"
    assert cuda_device("cpu") is None
    assert cuda_device(None) is None
    assert cuda_device("mps") is None


@pytest.mark.skipif(has_cuda_torch(), reason="a CUDA device is present")
def test_without_a_gpu_a_cuda_load_names_the_device(checkpoint):
    path, _ = checkpoint
    with pytest.raises(ballast.UnsupportedError, match="cuda:0"):
        ballast.Loader().load_tensor("w", path, device="cuda:0")
    assert not any(d.startswith("cuda") for d in cuda_devices())


@pytest.mark.skipif(not has_cuda_torch(), reason="no CUDA device (or no torch with CUDA)")
def test_cuda_tensors_reach_torch_without_a_copy(checkpoint):
    import torch

    path, tensors = checkpoint
    loader = ballast.Loader()
    for name, want in tensors.items():
        t = loader.load_tensor(name, path, device="cuda:0")
        assert t.device == "cuda:0"
        assert t.__dlpack_device__() == (2, 0)  # kDLCUDA
        got = torch.from_dlpack(t)
        assert got.is_cuda and got.data_ptr() == t.data_ptr
        np.testing.assert_array_equal(got.cpu().numpy(), want)
    cast = loader.load_tensor("w", path, device="cuda:0", transforms=[ballast.Cast("bf16")])
    assert torch.equal(torch.from_dlpack(cast).cpu(), torch.from_numpy(tensors["w"]).bfloat16())


@pytest.mark.skipif(not has_cuda_torch(), reason="no CUDA device (or no torch with CUDA)")
def test_safe_open_on_cuda_matches_the_package(checkpoint):
    import torch
    from safetensors import safe_open as theirs_open

    import ballast.safetensors as ours
    import ballast.safetensors.torch as ours_torch

    path, _ = checkpoint
    with ours.safe_open(path, "pt", device="cuda:0") as f, \
            theirs_open(path, "pt", device="cuda:0") as g:
        assert f.keys() == g.keys()
        for name in f.keys():
            a, b = f.get_tensor(name), g.get_tensor(name)
            assert a.device == b.device and torch.equal(a, b)
    loaded = ours_torch.load_file(path, device="cuda:0")
    assert all(t.is_cuda for t in loaded.values())


def test_gpu_direct_storage_is_auto_off_or_required(checkpoint):
    path, tensors = checkpoint
    with pytest.raises(ValueError, match="gpu_direct_storage"):
        ballast.Loader(gpu_direct_storage="sometimes")
    for mode in ("auto", "off", "required"):  # host loads never use it
        got = ballast.Loader(gpu_direct_storage=mode).load_tensor("w", path).numpy()
        np.testing.assert_array_equal(got, tensors["w"])


@pytest.mark.skipif(not has_cuda_torch(), reason="no CUDA device (or no torch with CUDA)")
def test_gpu_direct_storage_required_loads_or_names_the_reason(checkpoint):
    import torch

    path, tensors = checkpoint
    loader = ballast.Loader(gpu_direct_storage="required", read_mode="direct")
    try:
        t = loader.load_tensor("w", path, device="cuda:0")
    except ballast.UnsupportedError as e:  # no libcufile, or a file system refusing O_DIRECT
        assert "cuda:0" in str(e) and "GPUDirect Storage" in str(e)
        pytest.skip(f"no GPUDirect Storage here: {e}")
    np.testing.assert_array_equal(torch.from_dlpack(t).cpu().numpy(), tensors["w"])
