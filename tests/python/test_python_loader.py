"""ballast.Loader from Python: tensors zero-copy through DLPack and the buffer protocol,
storage that outlives the loader, no leak over many loads, many threads and asyncio on one
loader, the exception classes, and hostile input that raises rather than crashes."""
import asyncio
import gc
import os
import resource
import threading
import tracemalloc

import numpy as np
import pytest

from conftest import import_ballast

ballast = import_ballast()
import safetensors.numpy as reference  # noqa: E402  the writer of the fixtures


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("ckpt") / "model.safetensors"
    tensors = {f"layer{i}.weight": np.random.default_rng(i).standard_normal((64, 32)).astype(
        np.float32) for i in range(8)}
    tensors["ids"] = np.arange(10, dtype=np.int64)
    reference.save_file(tensors, str(path), metadata={"format": "pt"})
    return path, tensors


def mapped_ranges(path):
    """(start, end) of every mapping of `path` in this process."""
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            if line.rstrip().endswith(str(path)):
                start, end = line.split()[0].split("-")
                ranges.append((int(start, 16), int(end, 16)))
    return ranges


def test_mapped_load_is_a_view_of_the_mapping_that_outlives_the_loader(checkpoint):
    path, tensors = checkpoint
    with open(path, "rb") as f:  # page-cached, so that read_mode auto maps it
        f.read()
    loader = ballast.Loader(read_mode="mmap", mapped_writes="refused")
    tensor = loader.load_tensor("layer3.weight", str(path))
    assert tensor.storage == "mapped_file" and tensor.readonly
    array = np.from_dlpack(tensor)
    assert any(start <= array.ctypes.data < end for start, end in mapped_ranges(path))
    assert array.ctypes.data == tensor.data_ptr
    del loader, tensor
    gc.collect()
    assert mapped_ranges(path), "the mapping must live as long as the array"
    np.testing.assert_array_equal(array, tensors["layer3.weight"])
    assert not array.flags.writeable
    del array
    gc.collect()
    assert not mapped_ranges(path)


def test_mapped_tensors_are_private_writable_mappings_by_default(checkpoint):
    path, tensors = checkpoint
    before = path.read_bytes()
    loader = ballast.Loader(read_mode="mmap")
    first = loader.load_tensor("layer3.weight", str(path)).numpy()
    assert any(start <= first.ctypes.data < end for start, end in mapped_ranges(path))
    assert first.flags.writeable
    first[...] = 7  # copies the pages for this process only
    second = loader.load_tensor("layer3.weight", str(path)).numpy()
    assert second.ctypes.data != first.ctypes.data
    np.testing.assert_array_equal(second, tensors["layer3.weight"])
    assert path.read_bytes() == before


def test_dlpack_capsules_and_buffer_protocol(checkpoint):
    path, tensors = checkpoint
    tensor = ballast.Loader(read_mode="read").load_tensor("ids", path)
    assert tensor.storage == "host_buffer" and not tensor.readonly
    assert tensor.__dlpack_device__() == (1, 0)
    assert "dltensor_versioned" in repr(tensor.__dlpack__(max_version=(1, 0)))
    assert '"dltensor"' in repr(tensor.__dlpack__())
    with pytest.raises(BufferError):
        tensor.__dlpack__(copy=True)
    view = memoryview(tensor)
    assert view.format == "q" and view.shape == (10,) and not view.readonly
    np.testing.assert_array_equal(np.asarray(view), tensors["ids"])
    array = tensor.numpy()
    array[0] = 42  # ballast's own buffer: writable, and the same memory
    assert np.from_dlpack(tensor)[0] == 42


def test_memory_source_reads_the_buffer_in_place_and_keeps_it(checkpoint):
    path, tensors = checkpoint
    data = bytearray(path.read_bytes())
    tensor = ballast.Loader().load_tensor("layer1.weight", memoryview(data))
    assert tensor.readonly  # a view of the caller's bytes, which are the caller's
    address = np.frombuffer(data, np.uint8).ctypes.data
    assert address <= tensor.data_ptr < address + len(data)
    with pytest.raises(BufferError):  # exported: the bytearray cannot be resized under it
        data.extend(b"x")
    del data
    gc.collect()
    np.testing.assert_array_equal(tensor.numpy(), tensors["layer1.weight"])


def test_every_way_of_naming_what_to_load(checkpoint, tmp_path):
    path, tensors = checkpoint
    loader = ballast.Loader(num_threads=2, limits={"max_tensors": 1000})
    spec = ballast.TensorSpec("layer0.weight", source=ballast.Source(path, format="safetensors"),
                              transforms=[ballast.Transpose(0, 1), ballast.Cast(np.float16)])
    out = loader.load_tensor(spec, framework="np")
    np.testing.assert_array_equal(out, tensors["layer0.weight"].T.astype(np.float16))
    sliced = loader.load_tensor("layer2.weight", path, transforms=[ballast.Slice(0, 5, -3)],
                                shape=(56, 32), dtype="f32", framework="numpy")
    np.testing.assert_array_equal(sliced, tensors["layer2.weight"][5:-3])
    both = loader.load_tensors(["ids", "layer7.weight"], path)
    assert [t.name for t in both] == ["ids", "layer7.weight"]
    state = loader.load_checkpoint(path, ["layer*"], [ballast.Cast("bf16")])
    assert sorted(state) == [f"layer{i}.weight" for i in range(8)]
    assert {t.dtype for t in state.values()} == {"bf16"}
    meta = loader.get_metadata(path)
    assert meta.format == "safetensors" and meta.extra == {"format": "pt"}
    assert meta.tensors["ids"] == ballast.TensorInfo("i64", (10,), 80)
    assert loader.is_available(path) and not loader.is_available(tmp_path / "none")
    loader.preload(path)
    caps = loader.capabilities()
    assert "safetensors" in caps["formats"] and caps["limits"]["max_tensors"] == 1000
    quantized = loader.load_tensor("layer4.weight", path, transforms=[ballast.Quantize("int8")])
    assert set(quantized.parts) >= {"scales"}
    raw = np.arange(6, dtype=np.int16)
    got = loader.load_tensor("", ballast.Source(raw.tobytes(), format="raw", dtype=np.int16,
                                                shape=(2, 3)), framework="np")
    np.testing.assert_array_equal(got, raw.reshape(2, 3))


def test_iter_tensors_streams_and_can_be_closed_early(checkpoint):
    path, tensors = checkpoint
    loader = ballast.Loader()
    seen = dict(loader.iter_tensors(path, framework="np"))
    assert sorted(seen) == sorted(tensors)
    for name, array in seen.items():
        np.testing.assert_array_equal(array, tensors[name])
    stream = loader.iter_tensors(path)
    next(stream)
    stream.close()  # stops the load; nothing hangs
    specs = [ballast.TensorSpec("ids", source=path)]
    assert [n for n, _ in loader.iter_tensors(specs)] == ["ids"]


def test_many_threads_share_one_loader(checkpoint):
    path, tensors = checkpoint
    loader = ballast.Loader(read_mode="read")
    failures = []

    def work(i):
        try:
            for _ in range(20):
                name = f"layer{i % 8}.weight"
                np.testing.assert_array_equal(loader.load_tensor(name, path).numpy(),
                                              tensors[name])
        except Exception as e:  # noqa: BLE001 reported below
            failures.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_asyncio_loads_do_not_block_the_loop(checkpoint):
    path, tensors = checkpoint
    loader = ballast.Loader()

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        loaded = await asyncio.gather(*(loader.load_tensor_async(n, path) for n in tensors))
        state = await loader.load_checkpoint_async(path, framework="np")
        names = [n async for n, _ in loader.iter_tensors_async(path)]
        meta = await loader.get_metadata_async(path)
        task.cancel()
        return loaded, state, names, meta, ticks

    loaded, state, names, meta, ticks = asyncio.run(main())
    assert [t.name for t in loaded] == list(tensors) and sorted(names) == sorted(tensors)
    assert set(state) == set(meta.tensors) and ticks > 0


def test_no_leak_after_many_loads(checkpoint):
    path, _ = checkpoint
    loader = ballast.Loader(read_mode="read")

    def load_many():
        for _ in range(300):
            state = loader.load_checkpoint(path, framework="np")
            del state

    load_many()  # warm up the allocator and the loader's caches
    gc.collect()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    load_many()
    gc.collect()
    growth = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
    tracemalloc.stop()
    assert growth < 256 * 1024, f"Python heap grew by {growth} bytes over 300 loads"
    # 300 loads of ~70 KiB each would add ~20 MiB if they leaked.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before < 8 * 1024


def test_errors_are_the_code_classes_with_their_builtin_bases(checkpoint, tmp_path):
    path, _ = checkpoint
    loader = ballast.Loader()
    with pytest.raises(KeyError) as missing:
        loader.load_tensor("absent", path)
    e = missing.value
    assert isinstance(e, ballast.TensorNotFoundError) and isinstance(e, ballast.NotFoundError)
    assert e.code == "not_found" and e.tensor == "absent" and e.source == str(path)
    with pytest.raises(FileNotFoundError) as no_file:
        loader.load_tensor("x", tmp_path / "absent.safetensors")
    assert isinstance(no_file.value, ballast.SourceNotFoundError)
    with pytest.raises(ballast.InvalidArgumentError) as unknown:
        loader.load_tensor("ids", path, transforms=[ballast.Cast("f99")])
    assert "unknown dtype 'f99'; valid: f64, f32, f16, bf16" in str(unknown.value)
    with pytest.raises(ballast.InvalidArgumentError) as unknown:
        loader.load_tensor("ids", path, dtype="float99")
    assert "unknown dtype 'float99'; valid: f64, f32" in str(unknown.value)
    with pytest.raises(ballast.ShapeMismatchError):
        loader.load_tensor("ids", path, shape=(11,))
    with pytest.raises(TypeError):
        ballast.Loader(no_such_option=1)
    with pytest.raises(ValueError):
        ballast.Loader(read_mode="fast")
    bf16 = loader.load_tensor("ids", path, transforms=[ballast.Cast("bf16")])
    with pytest.raises(ballast.UnsupportedError, match="bf16.*torch.*Cast"):
        bf16.numpy()
    with pytest.raises(BufferError, match="bf16"):
        memoryview(bf16)
    assert np.from_dlpack(bf16.raw()).nbytes == 20


def hostile_variants(data):
    """Truncations, bit flips and header corruptions of one valid file."""
    yield b""
    yield data[:7]
    for cut in (8, 20, len(data) // 2, len(data) - 1):
        yield data[:cut]
    header = int.from_bytes(data[:8], "little")
    yield (header + 1000).to_bytes(8, "little") + data[8:]
    yield (2**63).to_bytes(8, "little") + data[8:]
    for i in range(8, 8 + header, max(1, header // 40)):
        for flip in (0x01, 0x20, 0x80):
            mutated = bytearray(data)
            mutated[i] ^= flip
            yield bytes(mutated)
    yield data[:8] + b"[" * header + data[8 + header:]
    yield data.replace(b'"F32"', b'"Q99"')
    yield data.replace(b"[64,32]", b"[64,33]")
    yield data.replace(b"[64,32]", b"[99999999999,99999999999]")


def test_hostile_input_raises_mapped_errors_and_never_crashes(checkpoint, tmp_path):
    path, _ = checkpoint
    loader = ballast.Loader()
    file = tmp_path / "hostile.safetensors"
    for variant in hostile_variants(path.read_bytes()):
        file.write_bytes(variant)
        for source in (variant, file):
            try:
                for tensor in loader.load_checkpoint(source).values():
                    if tensor.dtype not in ("bf16",):
                        tensor.numpy().sum()
            except ballast.Error as e:
                assert isinstance(e, (ValueError, LookupError, NotImplementedError, TypeError))
                assert e.code in ("invalid_format", "limit_exceeded", "not_found",
                                  "unsupported", "shape_mismatch", "dtype_mismatch")


def gguf_with_metadata(path):
    """A GGUF v3 file with no tensors and one KV pair of each kind the test checks."""
    import struct

    def text(s):
        b = s.encode()
        return struct.pack("<Q", len(b)) + b

    def kv(key, kind, value):
        return text(key) + struct.pack("<I", kind) + value

    pairs = [kv("general.architecture", 8, text("llama")),
             kv("llama.context_length", 4, struct.pack("<I", 4096)),
             kv("big", 10, struct.pack("<Q", 2**64 - 1)),
             kv("scores", 9, struct.pack("<IQff", 6, 2, 0.25, -1.5)),
             kv("bytes", 9, struct.pack("<IQ", 0, 3) + b"\x01\x02\xff"),
             kv("flags", 9, struct.pack("<IQ", 7, 2) + b"\x00\x01"),
             kv("tokens", 9, struct.pack("<IQ", 8, 2) + text("<s>") + text("hi"))]
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(pairs)) + b"".join(pairs))
    return path


def test_metadata_values_are_native_and_keep_gguf_arrays(checkpoint, tmp_path):
    loader = ballast.Loader()
    values = loader.get_metadata(gguf_with_metadata(tmp_path / "m.gguf")).values
    assert list(values) == ["general.architecture", "llama.context_length", "big", "scores",
                            "bytes", "flags", "tokens"]
    assert values["general.architecture"] == "llama"
    assert values["llama.context_length"] == 4096 and type(values["llama.context_length"]) is int
    assert values["big"] == 2**64 - 1
    assert values["scores"] == [0.25, -1.5]
    assert values["bytes"] == b"\x01\x02\xff"
    assert values["flags"] == [False, True]
    assert values["tokens"] == ["<s>", "hi"]
    path, _ = checkpoint
    assert loader.get_metadata(path).values == {"format": "pt"}
