"""ballast.safetensors against the real `safetensors` package (PyPI, in .venv) with numpy:
the same outputs, the same exception types, byte-identical files; plus what only ballast
reads (other formats, bytes sources). The torch module is tested in test_python_torch.py."""
import json
import struct

import numpy as np
import pytest

from conftest import import_ballast

ballast = import_ballast()
import ballast.safetensors as ours  # noqa: E402
import ballast.safetensors.numpy as ours_np  # noqa: E402
import safetensors as theirs  # noqa: E402
import safetensors.numpy as theirs_np  # noqa: E402

DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint64,
          np.uint32, np.uint16, np.uint8, np.bool_, np.complex64]
NAMES = ["a", "b.weight", "z", "é", "tab\tname", "quote\"back\\slash", "ctl\x01", "emoji🙂"]


def sample(seed=0):
    rng = np.random.default_rng(seed)
    tensors = {}
    for i, dtype in enumerate(DTYPES):
        shape = [(3, 4), (5,), (2, 1, 3), (0, 4), ()][i % 5]
        tensors[f"{NAMES[i % len(NAMES)]}{i}"] = np.asarray(rng.standard_normal(shape) * 100).astype(dtype)
    tensors["same_dtype_b"] = np.ones(3, np.float32)
    tensors["same_dtype_a"] = np.zeros(3, np.float32)
    return tensors


def assert_same_arrays(a, b):
    assert list(a) == list(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.parametrize("metadata", [None, {}, {"format": "np"}, {"ünïcode": "\n\"x\""}])
def test_saved_files_are_byte_identical(tmp_path, metadata):
    tensors = sample()
    assert ours_np.save(tensors, metadata=metadata) == theirs_np.save(tensors, metadata=metadata)
    ours_np.save_file(tensors, tmp_path / "o.safetensors", metadata=metadata)
    theirs_np.save_file(tensors, tmp_path / "t.safetensors", metadata=metadata)
    assert (tmp_path / "o.safetensors").read_bytes() == (tmp_path / "t.safetensors").read_bytes()
    big_endian = {"x": np.arange(5, dtype=">i4")}
    assert ours_np.save(big_endian) == theirs_np.save(big_endian)


def test_several_metadata_keys_give_the_same_header(tmp_path):
    """The package orders __metadata__ by a per-process hash; ballast sorts it. Same JSON."""
    tensors, metadata = sample(), {"z": "1", "a": "2", "m": "3"}

    def header(data):
        (n,) = struct.unpack("<Q", data[:8])
        return json.loads(data[8:8 + n]), data[8 + n:]

    assert header(ours_np.save(tensors, metadata)) == header(theirs_np.save(tensors, metadata))


def test_serialize_with_tensor_specs_of_every_dtype():
    buffer = np.arange(64, dtype=np.uint8)
    names = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
             "float16", "float32", "float64", "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz",
             "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "complex64"]
    sizes = {"int16": 2, "uint16": 2, "float16": 2, "bfloat16": 2, "int32": 4, "uint32": 4,
             "float32": 4, "int64": 8, "uint64": 8, "float64": 8, "complex64": 8}

    def specs(module):
        made = {f"t{n}": module.TensorSpec(dtype=n, shape=[2], data_ptr=buffer.ctypes.data,
                                           data_len=2 * sizes.get(n, 1)) for n in names}
        made["f4"] = module.TensorSpec(dtype="float4_e2m1fn_x2", shape=(3, 2),
                                       data_ptr=buffer.ctypes.data, data_len=6)
        return made

    mine, reference = specs(ours), specs(theirs)
    assert {k: (v.dtype, v.shape) for k, v in mine.items()} == {
        k: (v.dtype, v.shape) for k, v in reference.items()}
    assert repr(mine["f4"]) == repr(reference["f4"])
    assert ours.serialize(mine, {"k": "v"}) == theirs.serialize(reference, {"k": "v"})
    for module in (ours, theirs):
        with pytest.raises(module.SafetensorError):
            module.TensorSpec(dtype="float128", shape=[1], data_ptr=0, data_len=16)
        with pytest.raises(module.SafetensorError):
            module.serialize({"x": module.TensorSpec(dtype="float32", shape=[2],
                                                     data_ptr=buffer.ctypes.data, data_len=4)})
        with pytest.raises(TypeError):
            module.serialize({"x": {"dtype": "float32"}})
        with pytest.raises(TypeError):
            module.serialize({}, metadata={"k": 1})


def test_loads_match(tmp_path):
    tensors = sample(1)
    path = tmp_path / "m.safetensors"
    theirs_np.save_file(tensors, path, metadata={"k": "v"})
    assert_same_arrays(ours_np.load_file(path), theirs_np.load_file(path))
    assert_same_arrays(dict(sorted(ours_np.load_file(str(path)).items())),
                       dict(sorted(tensors.items())))
    data = path.read_bytes()
    # load() of bytes: the package's order follows a hash map; compare by name.
    assert_same_arrays(dict(sorted(ours_np.load(data).items())),
                       dict(sorted(theirs_np.load(data).items())))
    assert all(a.flags.writeable for a in ours_np.load_file(path).values())
    mine = {k: (v["dtype"], v["shape"], bytes(v["data"])) for k, v in ours.deserialize(data)}
    reference = {k: (v["dtype"], v["shape"], bytes(v["data"])) for k, v in theirs.deserialize(data)}
    assert mine == reference


def test_safe_open_and_slices_with_steps(tmp_path):
    path = tmp_path / "s.safetensors"
    cube = np.arange(6 * 5 * 4, dtype=np.float32).reshape(6, 5, 4)
    theirs_np.save_file({"cube": cube, "ids": np.arange(7), "e": np.zeros((0, 3))}, path,
                        metadata={"a": "b"})
    indexes = [np.s_[:], np.s_[1:4], np.s_[::2], np.s_[1::3, :, 1:3], np.s_[..., ::3],
               np.s_[-2], np.s_[2, -1], np.s_[2, 1:4:2, 3], np.s_[..., 0],
               np.s_[:, 0:0], (slice(None),)]
    with ours.safe_open(path, framework="np") as f, theirs.safe_open(path, "numpy") as g:
        assert f.keys() == g.keys() and f.offset_keys() == g.offset_keys()
        assert f.metadata() == g.metadata()
        assert_same_arrays(f.get_tensors(), g.get_tensors())
        np.testing.assert_array_equal(f.get_tensor("cube"), g.get_tensor("cube"))
        a, b = f.get_slice("cube"), g.get_slice("cube")
        assert (a.get_shape(), a.get_dtype()) == (b.get_shape(), b.get_dtype())
        for index in indexes:
            x, y = a[index], b[index]
            assert x.shape == y.shape and x.dtype == y.dtype, index
            np.testing.assert_array_equal(x, y)
        # The package fails (SystemError, OverflowError) on an empty reversed range and on a
        # start before the first element; ballast follows Python's slicing.
        assert a[4:2].shape == (0, 5, 4)
        np.testing.assert_array_equal(a[-100:100], cube)
        for bad in (np.s_[6], np.s_[0, 0, 0, 0], np.s_[:, -6]):
            with pytest.raises(ours.SafetensorError):
                a[bad]
            with pytest.raises(theirs.SafetensorError):
                b[bad]
        for module_file in (f, g):
            with pytest.raises(type(module_file).__module__.startswith("ballast")
                               and ours.SafetensorError or theirs.SafetensorError):
                module_file.get_tensor("absent")
    for handle in (f, g):
        with pytest.raises(Exception, match="closed"):
            handle.keys()


def test_same_exceptions_on_bad_input(tmp_path):
    good = theirs_np.save({"w": np.arange(12, dtype=np.float32)})
    (n,) = struct.unpack("<Q", good[:8])
    bad_inputs = [b"", b"\x01", good[:8], good[:n + 8 - 1], good[:-1], good + b"\0",
                  struct.pack("<Q", n + 100) + good[8:], struct.pack("<Q", 2**40) + good[8:],
                  good.replace(b'"F32"', b'"F99"'), good.replace(b"[0,48]", b"[0,52]"),
                  good.replace(b"[0,48]", b"[4,48]"), struct.pack("<Q", 2) + b"{}x"]
    file = tmp_path / "bad.safetensors"
    for data in bad_inputs:
        file.write_bytes(data)
        for load_ours, load_theirs in ((ours_np.load, theirs_np.load),
                                       (ours_np.load_file, theirs_np.load_file)):
            argument = data if load_ours is ours_np.load else file
            with pytest.raises(theirs.SafetensorError):
                load_theirs(argument)
            with pytest.raises(ours.SafetensorError):
                load_ours(argument)
    for module in (ours, theirs):
        with pytest.raises(FileNotFoundError):
            module.safe_open(tmp_path / "absent.safetensors", framework="np")
        with pytest.raises(module.SafetensorError):
            module.safe_open(file, framework="tensorflow2")


def test_bf16_without_ml_dtypes_fails_as_the_package_does(tmp_path):
    path = tmp_path / "bf16.safetensors"
    raw = np.arange(4, dtype=np.uint16)
    theirs.serialize_file({"h": theirs.TensorSpec(dtype="bfloat16", shape=[4],
                                                  data_ptr=raw.ctypes.data, data_len=8)}, path)
    for module in (ours_np, theirs_np):
        with pytest.raises(TypeError):
            module.load_file(path)


def test_reads_what_only_ballast_reads(tmp_path):
    """safe_open and load_file on a .npy file and on bytes (the package reads neither)."""
    array = np.arange(10, dtype=np.int32)
    np.save(tmp_path / "x.npy", array)
    loaded = ours_np.load_file(tmp_path / "x.npy")
    np.testing.assert_array_equal(next(iter(loaded.values())), array)
    data = theirs_np.save({"w": array})
    with ours.safe_open(data, framework="np") as f:
        np.testing.assert_array_equal(f.get_tensor("w"), array)
