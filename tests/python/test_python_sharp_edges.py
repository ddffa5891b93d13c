"""Regression tests for Python API edges that once gave silently wrong results or crashed:
the safetensors drop-in on files that are not safetensors, a single string where a sequence
is taken, and a module-level Loader whose progress callback refers back to its module."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import import_ballast, run_debian_python

ballast = import_ballast()
import ballast.safetensors as ours  # noqa: E402
import ballast.safetensors.numpy as ours_np  # noqa: E402
import safetensors.numpy as reference  # noqa: E402  the writer of the fixtures

TENSORS = {"lm_head.weight": np.arange(12, dtype=np.float32).reshape(3, 4),
           "embed.weight": np.ones((2, 4), np.float32),
           "layers.0.bias": np.full(4, 7, np.float32)}


def write_torch_zip(path):
    """A .bin checkpoint written by torch.save (a zip whose first bytes are "PK")."""
    run_debian_python("""
import sys, torch
torch.save({"lm_head.weight": torch.arange(12, dtype=torch.float32).reshape(3, 4),
            "embed.weight": torch.ones(2, 4), "layers.0.bias": torch.full((4,), 7.0)},
           sys.argv[1])
""", path)


def write_sharded(folder):
    """A sharded safetensors checkpoint with its index, as transformers writes it."""
    names = sorted(TENSORS)
    shards = {"model-00001-of-00002.safetensors": names[:2],
              "model-00002-of-00002.safetensors": names[2:]}
    for shard, members in shards.items():
        reference.save_file({n: TENSORS[n] for n in members}, str(folder / shard))
    index = {"metadata": {"total_size": 80},
             "weight_map": {n: s for s, members in shards.items() for n in members}}
    path = folder / "model.safetensors.index.json"
    path.write_text(json.dumps(index, indent=2))
    return path


@pytest.fixture(scope="module")
def other_formats(tmp_path_factory):
    folder = tmp_path_factory.mktemp("formats")
    np.savez(folder / "model.npz", **TENSORS)
    write_torch_zip(folder / "pytorch_model.bin")
    return {"npz": folder / "model.npz", "bin": folder / "pytorch_model.bin",
            "index": write_sharded(folder)}


@pytest.mark.parametrize("kind", ["npz", "bin", "index"])
def test_dropin_reads_every_format_it_advertises(other_formats, kind):
    """load_file, metadata() and offset_keys() once read a zip's "PK.." (or an index's "{")
    as a safetensors header length and raised MemoryError."""
    path = other_formats[kind]
    loaded = ours_np.load_file(path)
    assert sorted(loaded) == sorted(TENSORS)
    for name, array in TENSORS.items():
        np.testing.assert_array_equal(loaded[name], array)
    with ours.safe_open(path, framework="np") as f:
        assert sorted(f.offset_keys()) == sorted(TENSORS)
        metadata = f.metadata()
        assert metadata is None or isinstance(metadata, dict)


def test_huge_claimed_header_length_is_never_allocated(tmp_path):
    """A header length past the file's end reads as "not a safetensors header", at once."""
    from ballast.safetensors._open import safetensors_header
    path = tmp_path / "claims.bin"
    path.write_bytes((1 << 62).to_bytes(8, "little") + b"{}")
    assert safetensors_header(str(path)) is None
    assert safetensors_header((1 << 62).to_bytes(8, "little") + b"{}") is None


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("ckpt") / "model.safetensors"
    reference.save_file(TENSORS, str(path))
    return path


def test_a_single_pattern_string_is_one_pattern(checkpoint):
    """load_checkpoint(src, "lm_head.*") once matched every tensor, one character at a time."""
    loader = ballast.Loader()
    assert list(loader.load_checkpoint(checkpoint, "lm_head.*")) == ["lm_head.weight"]
    assert [n for n, _ in loader.iter_tensors(checkpoint, "lm_head.*")] == ["lm_head.weight"]
    with pytest.raises(ballast.NotFoundError):
        loader.load_checkpoint(checkpoint, "l")  # not the characters of a longer pattern


def test_a_single_transform_is_one_transform_list(checkpoint):
    loader = ballast.Loader()
    for transforms in ("cast:f16", ballast.Cast("f16"), [ballast.Cast("f16")]):
        loaded = loader.load_checkpoint(checkpoint, "lm_head.*", transforms)
        assert loaded["lm_head.weight"].dtype == "f16", transforms
        streamed = dict(loader.iter_tensors(checkpoint, ["lm_head.*"], transforms))
        assert streamed["lm_head.weight"].dtype == "f16", transforms
    spec = ballast.TensorSpec("lm_head.weight", transforms="cast:f16,transpose:0:1")
    assert loader.load_tensor(spec, checkpoint).shape == (4, 3)


def test_a_single_spec_is_a_list_of_one(checkpoint):
    loader = ballast.Loader()
    [tensor] = loader.load_tensors("lm_head.weight", checkpoint)
    assert tensor.name == "lm_head.weight" and tensor.shape == (3, 4)


def test_module_level_loader_with_a_progress_callback_exits_cleanly():
    """A Loader kept at module level whose callback refers to the module is a reference cycle
    through the native loader; it is collected, and nanobind reports no leak at exit."""
    program = ("import ballast\n"
               "seen = []\n"
               "loader = ballast.Loader(on_download_progress=lambda *a: seen.append(a))\n"
               "class Holder:\n"
               "    def progress(self, *a): pass\n"
               "holder = Holder()\n"
               "holder.loader = ballast.Loader(on_download_progress=holder.progress)\n")
    env = dict(os.environ)
    extra = os.environ.get("BALLAST_PYTHONPATH")
    if extra:
        env["PYTHONPATH"] = extra + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "leak" not in result.stderr, result.stderr


def test_progress_callback_must_be_callable():
    with pytest.raises(TypeError):
        ballast.Loader(on_download_progress="not a function")


def test_a_pattern_that_matches_nothing_is_a_key_error_naming_the_closest(checkpoint):
    """Once a FileNotFoundError of the (existing) file."""
    loader = ballast.Loader()
    for call in (lambda: loader.load_checkpoint(checkpoint, "lm_haed.*"),
                 lambda: list(loader.iter_tensors(checkpoint, "lm_haed.*"))):
        with pytest.raises(KeyError) as raised:
            call()
        assert not isinstance(raised.value, FileNotFoundError)
        assert isinstance(raised.value, ballast.TensorNotFoundError)
        assert "lm_haed.*" in str(raised.value)
    with pytest.raises(ballast.TensorNotFoundError, match="closest: 'lm_head.weight'"):
        loader.load_checkpoint(checkpoint, "lm_haed.weight*")
