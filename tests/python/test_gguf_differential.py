"""ballast reads GGUF files as gguf-py's GGUFReader (the reference reader from llama.cpp)
reads them, or refuses them.

Files written by gguf-py's GGUFWriter (every plain and quantized tensor type, every metadata
kind, arrays and nested arrays, several alignments) and hostile variants built byte by byte
(duplicate tensor names and keys, overlapping and misaligned tensor data, bogus alignment
keys, data past the end, names that are not UTF-8, unknown types...) plus seeded random
field mutations of the written files. For each: either ballast refuses it (exit 1), or
GGUFReader reads it too and both agree on every tensor (name, type, shape, bytes) and every
metadata value; when GGUFReader refuses a file, ballast refuses it too.
"""
import hashlib
import json
import math
import random
import struct
import subprocess

import pytest
from conftest import require

SEED = 20261208
MUTANTS_PER_BASE = 25

try:
    import numpy as np
    import gguf
except ImportError:  # reported by the fixture below
    gguf = None


@pytest.fixture(scope="module")
def gguf_py():
    require(gguf is not None, "gguf-py (PyPI package gguf)", "scripts/setup.sh installs it")
    return gguf


# --- GGUFWriter files ----------------------------------------------------------------------

QUANTIZED = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
             "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S",
             "IQ4_XS", "IQ1_M", "TQ1_0", "TQ2_0", "MXFP4"]


def write_with_gguf_py(path, rng, alignment, quantized):
    T = gguf.GGMLQuantizationType
    w = gguf.GGUFWriter(str(path), "llama")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    w.add_uint8("k.u8", 200)
    w.add_int8("k.i8", -100)
    w.add_uint16("k.u16", 60000)
    w.add_int16("k.i16", -30000)
    w.add_uint32("k.u32", 4_000_000_000)
    w.add_int32("k.i32", -2_000_000_000)
    w.add_uint64("k.u64", 2**64 - 1)
    w.add_int64("k.i64", -(2**63))
    w.add_float32("k.f32", 0.1)
    w.add_float64("k.f64", -1e300)
    w.add_bool("k.bool", True)
    w.add_string("k.str", "héllo ✓")
    w.add_string("k.empty", "")
    w.add_array("k.ints", [1, 2, 3])
    w.add_array("k.floats", [0.5, -2.25])
    w.add_array("k.strs", ["a", "", "ünï"])
    w.add_array("k.bools", [True, False])
    w.add_array("k.nested", [[1, 2], [3]])
    w.add_array("k.none", [])
    w.add_tensor("f32", (np.arange(12, dtype=np.float32) - 5).reshape(3, 4))
    w.add_tensor("f16", np.linspace(-1, 1, 8, dtype=np.float16))
    w.add_tensor("f64", np.array([1.5, -2.5], dtype=np.float64))
    w.add_tensor("i8", np.arange(-3, 3, dtype=np.int8).reshape(2, 3))
    w.add_tensor("i16", np.array([-1, 7], dtype=np.int16))
    w.add_tensor("i32", np.array([[1], [2]], dtype=np.int32))
    w.add_tensor("i64", np.array([2**40], dtype=np.int64))
    w.add_tensor("bf16", np.array([0x3F80, 0xC000, 0x7F80], dtype=np.uint16), raw_dtype=T.BF16)
    w.add_tensor("scalar", np.array(3.0, dtype=np.float32))
    for name in quantized:
        block, size = gguf.GGML_QUANT_SIZES[T[name]]
        rows = rng.choice([1, 2])
        blob = np.frombuffer(rng.randbytes(rows * 2 * size), dtype=np.uint8)
        w.add_tensor(f"q.{name.lower()}", blob.reshape(rows, 2 * size), raw_dtype=T[name])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# --- a byte-level writer for what GGUFWriter will not write ----------------------------------

TYPE = {"u8": 0, "i8": 1, "u16": 2, "i16": 3, "u32": 4, "i32": 5, "f32": 6, "bool": 7,
        "str": 8, "arr": 9, "u64": 10, "i64": 11, "f64": 12}


def gstr(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack("<Q", len(b)) + b


def kv(key, kind, payload):
    return gstr(key) + struct.pack("<I", TYPE[kind]) + payload


def tensor_info(name, ne, type_id, offset):
    return (gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
            + struct.pack("<I", type_id) + struct.pack("<Q", offset))


def assemble(kvs, infos, data, alignment=32, version=3, counts=None):
    n_tensors, n_kv = counts or (len(infos), len(kvs))
    header = (b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv) + b"".join(kvs)
              + b"".join(infos))
    return header + b"\0" * (-len(header) % alignment) + data


def f32_info(name, count, offset):
    return tensor_info(name, [count], 0, offset)


FLOATS = struct.pack("<8f", *range(8))


def hostile_files():
    """name -> bytes: constructions that gguf-py or ballast may read differently."""
    two = [f32_info("a", 4, 0), f32_info("b", 4, 32)]
    data = FLOATS[:16] + b"\0" * 16 + FLOATS[16:]
    arch = kv("general.architecture", "str", gstr("llama"))
    return {
        "plain": assemble([arch], two, data),
        "duplicate_tensor_names": assemble([arch], [f32_info("a", 4, 0), f32_info("a", 4, 32)],
                                           data),
        "duplicate_keys": assemble([arch, kv("general.architecture", "str", gstr("gpt2"))],
                                   two, data),
        "duplicate_alignment_keys": assemble(
            [kv("general.alignment", "u32", struct.pack("<I", 32)),
             kv("general.alignment", "u32", struct.pack("<I", 64))], two, data),
        "overlapping_tensor_data": assemble([arch], [f32_info("a", 8, 0), f32_info("b", 4, 0)],
                                            FLOATS),
        "misaligned_offset": assemble([arch], [f32_info("a", 4, 0), f32_info("b", 4, 16)],
                                      FLOATS),
        "alignment_48": assemble([kv("general.alignment", "u32", struct.pack("<I", 48))], two,
                                 data, alignment=48),
        "alignment_zero": assemble([kv("general.alignment", "u32", struct.pack("<I", 0))], two,
                                   data),
        "alignment_u64": assemble([kv("general.alignment", "u64", struct.pack("<Q", 32))], two,
                                  data),
        "alignment_string": assemble([kv("general.alignment", "str", gstr("32"))], two, data),
        "alignment_64": assemble([kv("general.alignment", "u32", struct.pack("<I", 64))],
                                 [f32_info("a", 4, 0), f32_info("b", 4, 64)],
                                 FLOATS[:16] + b"\0" * 48 + FLOATS[16:], alignment=64),
        "data_past_eof": assemble([arch], two, data[:40]),
        "offset_past_eof": assemble([arch], [f32_info("a", 4, 1 << 40)], FLOATS),
        "tensor_name_not_utf8": assemble([arch], [f32_info(b"a\xff", 4, 0)], FLOATS),
        "key_not_utf8": assemble([kv(b"general.\xc3(", "u32", struct.pack("<I", 1))], two, data),
        "string_value_not_utf8": assemble([kv("general.name", "str", gstr(b"\xff"))], two, data),
        "bool_two": assemble([kv("k", "bool", b"\x02")], two, data),
        "unknown_value_type": assemble([gstr("k") + struct.pack("<I", 13) + b"\0" * 8], two,
                                       data),
        "unknown_tensor_type": assemble([arch], [tensor_info("a", [4], 33, 0)], FLOATS),
        "five_dims": assemble([arch], [tensor_info("a", [1, 1, 1, 1, 4], 0, 0)], FLOATS),
        "zero_dims_scalar": assemble([arch], [tensor_info("a", [], 0, 0)], FLOATS[:4]),
        "quant_row_not_whole_blocks": assemble([arch], [tensor_info("a", [16], 8, 0)],
                                               b"\0" * 34),
        "more_tensors_than_infos": assemble([arch], two, data, counts=(3, 1)),
        "more_keys_than_present": assemble([arch], two, data, counts=(2, 2)),
        "version_1": assemble([arch], two, data, version=1),
        "version_2": assemble([arch], two, data, version=2),
        "big_endian_version": assemble([arch], two, data, version=3 << 24),
        "array_of_arrays": assemble(
            [kv("k", "arr", struct.pack("<IQ", TYPE["arr"], 2)
                + struct.pack("<IQ", TYPE["u8"], 2) + b"\x01\x02"
                + struct.pack("<IQ", TYPE["str"], 1) + gstr("x"))], two, data),
        "array_of_arrays_of_strings": assemble(
            [kv("k", "arr", struct.pack("<IQ", TYPE["arr"], 2)
                + struct.pack("<IQ", TYPE["str"], 2) + gstr("a") + gstr("b")
                + struct.pack("<IQ", TYPE["str"], 0))], two, data),
        "array_of_arrays_empty_first": assemble(
            [kv("k", "arr", struct.pack("<IQ", TYPE["arr"], 2)
                + struct.pack("<IQ", TYPE["str"], 0)
                + struct.pack("<IQ", TYPE["str"], 1) + gstr("x"))], two, data),
        "non_finite_floats": assemble(
            [kv("k.f32", "arr", struct.pack("<IQ", TYPE["f32"], 3)
                + struct.pack("<3f", float("nan"), float("inf"), -0.0)),
             kv("k.f64", "f64", struct.pack("<d", float("-inf")))], two, data),
        "empty_array_of_strings": assemble(
            [kv("k", "arr", struct.pack("<IQ", TYPE["str"], 0))], two, data),
        "string_past_eof": assemble([kv("k", "str", struct.pack("<Q", 1 << 30))], [], b""),
    }


def mutate(rng, blob, header_end):
    """One header field overwritten: a random 1, 4 or 8 bytes inside the header."""
    out = bytearray(blob)
    width = rng.choice([1, 4, 8])
    at = rng.randrange(0, max(header_end - width, 1))
    value = rng.choice([0, 1, 2, 31, 32, 64, 255, 2**32 - 1, 2**63, rng.getrandbits(64)])
    out[at:at + width] = (value % (1 << (8 * width))).to_bytes(width, "little")
    return bytes(out)


# --- the readers ----------------------------------------------------------------------------

def flatten(value):
    if isinstance(value, list):
        return [x for v in value for x in flatten(v)]
    return [value]


def reference_reading(path):
    """(tensors, metadata) as GGUFReader reads them, or None when it refuses the file."""
    try:
        reader = gguf.GGUFReader(str(path))
        tensors = {}
        for t in reader.tensors:
            tensors[t.name] = [t.tensor_type.name.lower(), [int(d) for d in reversed(t.shape)],
                               hashlib.sha256(np.ascontiguousarray(t.data).tobytes()).hexdigest()]
        metadata = {}
        for name, field in reader.fields.items():
            if name.startswith("GGUF."):
                continue
            try:
                metadata[name] = field.contents()
            except UnicodeDecodeError:
                metadata[name] = "<not UTF-8>"
        return tensors, metadata
    except Exception:  # ValueError, KeyError, IndexError...: GGUFReader refused the file
        return None


def ballast_reading(cli, path):
    """(tensors, metadata) as ballast reads them, or None when it refuses the file. Its
    messages may quote a name's bytes, so they are decoded leniently."""
    hashed = subprocess.run([cli, "hash", "--json", str(path)], capture_output=True, timeout=60)
    if hashed.returncode != 0:
        stderr = hashed.stderr.decode(errors="replace")
        assert hashed.returncode == 1, (path, hashed.returncode, stderr)
        return None
    inspected = subprocess.run([cli, "inspect", "--json", str(path)], capture_output=True,
                               timeout=60, check=True)
    tensors = {name: [t["dtype"], t["shape"], t["sha256"]]
               for name, t in json.loads(hashed.stdout)["tensors"].items()}
    return tensors, json.loads(inspected.stdout)["metadata"]


def same_value(ours, theirs):
    if theirs == "<not UTF-8>":
        return isinstance(ours, str)
    if isinstance(theirs, float) and not math.isfinite(theirs):  # JSON writes null
        return ours is None
    if isinstance(theirs, float) and theirs == 0:
        return ours == 0 and math.copysign(1, ours) == math.copysign(1, theirs)
    if isinstance(theirs, list):
        ours = flatten(ours)  # GGUFReader flattens arrays of arrays
        return len(ours) == len(theirs) and all(same_value(o, t) for o, t in zip(ours, theirs))
    if isinstance(theirs, bool) or isinstance(ours, bool):
        return ours is theirs
    return ours == theirs


def disagreement(cli, path):
    """None when ballast refuses `path` or reads it as GGUFReader does; else what differs."""
    ours = ballast_reading(cli, path)
    if ours is None:
        return None
    theirs = reference_reading(path)
    if theirs is None:
        return f"{path.name}: GGUFReader refuses it, ballast reads it"
    if ours[0] != theirs[0]:
        return f"{path.name}: tensors differ: ballast {ours[0]}, GGUFReader {theirs[0]}"
    if set(ours[1]) != set(theirs[1]):
        return (f"{path.name}: keys differ: ballast {sorted(ours[1])}, "
                f"GGUFReader {sorted(theirs[1])}")
    for key, value in theirs[1].items():
        if not same_value(ours[1][key], value):
            return f"{path.name}: '{key}' is {ours[1][key]!r} to ballast, {value!r} to GGUFReader"
    return None


@pytest.fixture(scope="module")
def written(gguf_py, tmp_path_factory):
    root = tmp_path_factory.mktemp("gguf")
    rng = random.Random(SEED)
    files = []
    for alignment in (None, 1, 64, 256):
        path = root / f"written-{alignment}.gguf"
        write_with_gguf_py(path, rng, alignment, QUANTIZED)
        files.append(path)
    return files


def test_gguf_py_files_are_read_alike(ballast_cli, written):
    for path in written:
        assert ballast_reading(ballast_cli, path) is not None, path
        assert disagreement(ballast_cli, path) is None


def test_hostile_files_are_refused_or_read_alike(ballast_cli, gguf_py, tmp_path):
    problems = []
    for name, blob in hostile_files().items():
        path = tmp_path / f"{name}.gguf"
        path.write_bytes(blob)
        problem = disagreement(ballast_cli, path)
        if problem:
            problems.append(problem)
    assert not problems, "\n".join(problems)


def test_mutated_gguf_py_files_are_refused_or_read_alike(ballast_cli, written, tmp_path):
    rng = random.Random(SEED)
    problems = []
    for base in written:
        blob = base.read_bytes()
        header_end = gguf.GGUFReader(str(base)).data_offset
        for i in range(MUTANTS_PER_BASE):
            path = tmp_path / f"{base.stem}-{i}.gguf"
            path.write_bytes(mutate(rng, blob, header_end))
            problem = disagreement(ballast_cli, path)
            if problem:
                problems.append(problem)
    assert not problems, "\n".join(problems)
