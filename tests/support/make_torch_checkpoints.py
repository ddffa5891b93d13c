"""Writes torch.save checkpoints with Debian's python3-torch for pytorch_generated_test.

Usage: /usr/bin/python3 make_torch_checkpoints.py OUT_DIR

Writes the checkpoints into OUT_DIR and OUT_DIR/expected.json:
  {"<file>": {"tensors": {"<name>": {"dtype", "shape", "sha256"}},
              "values": {"<dotted path>": plain value},
              "container": "zip" | "legacy"}}
Hashes are of each tensor's logical contents, C-order little-endian, as torch itself sees them.
Files that torch does not write itself (big-endian, deflated members) are rewritten from real
torch.save output here, so their expected hashes are those of the original tensors.
"""
import collections
import hashlib
import io
import json
import os
import pickle
import pickletools
import struct
import sys
import zipfile

import torch

OUT = sys.argv[1]
EXPECTED = {}

DTYPE_NAMES = {
    torch.float64: "f64", torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
    torch.uint8: "u8", torch.bool: "bool", torch.complex64: "c64", torch.complex128: "c128",
}


def tensor_hash(t):
    flat = t.detach().contiguous().reshape(-1)
    return hashlib.sha256(flat.view(torch.uint8).numpy().tobytes()).hexdigest()


def describe(obj, path, tensors, values):
    join = (lambda k: f"{path}.{k}" if path else str(k))
    if isinstance(obj, torch.Tensor):
        tensors[path] = {"dtype": DTYPE_NAMES[obj.dtype], "shape": list(obj.shape),
                         "sha256": tensor_hash(obj)}
    elif isinstance(obj, dict):
        for k, v in obj.items():
            describe(v, join(k), tensors, values)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            describe(v, join(i), tensors, values)
    elif obj is None or isinstance(obj, (bool, int, float, str)):
        if isinstance(obj, int) and not isinstance(obj, bool) and abs(obj) >= 2**63:
            return  # big ints are not plain values for ballast
        values[path] = obj


def save(name, obj, legacy=False, protocol=2, record=True):
    path = os.path.join(OUT, name)
    torch.save(obj, path, pickle_protocol=protocol, _use_new_zipfile_serialization=not legacy)
    if record:
        tensors, values = {}, {}
        describe(obj, "", tensors, values)
        EXPECTED[name] = {"tensors": tensors, "values": values,
                          "container": "legacy" if legacy else "zip"}
    return path


def every_dtype():
    torch.manual_seed(7)
    d = collections.OrderedDict()
    d["f64"] = torch.randn(3, 2, dtype=torch.float64)
    d["f32"] = torch.randn(2, 3, 4)
    d["f16"] = torch.randn(7).half()
    d["bf16"] = torch.randn(2, 5).bfloat16()
    d["i64"] = torch.arange(-6, 6, dtype=torch.int64).reshape(3, 4)
    d["i32"] = torch.tensor([-2**31, 2**31 - 1, 0], dtype=torch.int32)
    d["i16"] = torch.tensor([[-300, 301], [7, -8]], dtype=torch.int16)
    d["i8"] = torch.tensor([-128, 127, 0, 5], dtype=torch.int8)
    d["u8"] = torch.tensor([0, 255, 128], dtype=torch.uint8)
    d["bool"] = torch.tensor([True, False, True])
    d["c64"] = torch.randn(3, dtype=torch.complex64)
    d["c128"] = torch.randn(2, 2, dtype=torch.complex128)
    d["scalar"] = torch.tensor(2.5)
    d["empty"] = torch.zeros(0, 4)
    return d


def views():
    base = torch.arange(48, dtype=torch.float32)
    m = base[:24].view(4, 6)
    return {
        "base": base,
        "transposed": m.t(),
        "columns": m[:, 1:4],
        "offset_rows": m[2:],
        "every_third": base[1::3],
        "expanded": torch.tensor([1.0, 2.0, 3.0])[:, None].expand(3, 4),
        "permuted": base.view(2, 3, 8).permute(2, 0, 1),
        "half_view": torch.arange(10, dtype=torch.float16)[3:8],
    }


def nested():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(5, 4)).sum().backward()
    opt.step()
    shared = torch.randn(3, 3)
    return {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "epoch": 5,
        "config": {"lr": 0.01, "name": "run-\u00e9\u2713", "flags": [True, False, None]},
        "tied": {"embed": shared, "lm_head": shared},
        "param": torch.nn.Parameter(torch.randn(2, 2)),
        "items": [torch.ones(2), (torch.zeros(1, dtype=torch.int64), "tag")],
    }


def plain_values():
    return collections.OrderedDict(
        [("i", 42), ("neg", -7), ("large", 2**40), ("f", 0.1), ("s", "h\u00e9llo \u2713"),
         ("t", True), ("n", None), ("nested", {"a": [1, 2.5, "x"], "b": (3, None)}),
         ("raw", b"\x00\xff"), ("huge", 2**70)])


# Every dtype in both containers and protocols 2 and 4 (5 for zip).
for legacy in (False, True):
    kind = "legacy" if legacy else "zip"
    for protocol in (2, 4) + (() if legacy else (5,)):
        save(f"dtypes_{kind}_p{protocol}.pt", every_dtype(), legacy, protocol)
    save(f"views_{kind}.pt", views(), legacy)
    save(f"nested_{kind}.pt", nested(), legacy)
    save(f"bare_{kind}.pt", torch.arange(6, dtype=torch.int32).reshape(2, 3), legacy)
    # Plain data in every protocol: exercises the text opcodes of protocols 0 and 1.
    for protocol in range(0, 6 if not legacy else 5):
        save(f"plain_{kind}_p{protocol}.pt", plain_values(), legacy, protocol)


def rewrite_zip(src_name, dst_name, transform_member, extra_members=()):
    src = os.path.join(OUT, src_name)
    dst = os.path.join(OUT, dst_name)
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data, method = transform_member(info.filename, zin.read(info.filename))
            zout.writestr(zipfile.ZipInfo(info.filename), data, compress_type=method)
        for name, data in extra_members:
            zout.writestr(zipfile.ZipInfo(name), data, compress_type=zipfile.ZIP_STORED)
    EXPECTED[dst_name] = dict(EXPECTED[src_name])


# Big-endian files: each storage byte-swapped per element (swap unit, element size).
STORAGE_UNITS = {
    "DoubleStorage": (8, 8), "FloatStorage": (4, 4), "HalfStorage": (2, 2),
    "BFloat16Storage": (2, 2), "LongStorage": (8, 8), "IntStorage": (4, 4),
    "ShortStorage": (2, 2), "CharStorage": (1, 1), "ByteStorage": (1, 1), "BoolStorage": (1, 1),
    "ComplexFloatStorage": (4, 8), "ComplexDoubleStorage": (8, 16),
}


def storage_types(pickle_bytes):
    """key -> storage class name, read from a checkpoint pickle without building tensors."""
    found = {}

    class Scan(pickle.Unpickler):
        def find_class(self, module, name):
            if module == "collections" and name == "OrderedDict":
                return collections.OrderedDict
            return name if name.endswith("Storage") else (lambda *args, **kwargs: None)

        def persistent_load(self, pid):
            found[str(pid[2])] = pid[1]
            return None

    Scan(io.BytesIO(pickle_bytes)).load()
    return found


def swap(data, unit):
    if unit == 1:
        return data
    return b"".join(data[i:i + unit][::-1] for i in range(0, len(data), unit))


def zip_big_endian(src_name, dst_name):
    with zipfile.ZipFile(os.path.join(OUT, src_name)) as z:
        root = z.namelist()[0].split("/")[0]
        types = storage_types(z.read(f"{root}/data.pkl"))

    def member(name, data):
        folder, _, leaf = name.rpartition("/")
        if folder.endswith("/data"):
            data = swap(data, STORAGE_UNITS[types[leaf]][0])
        return data, zipfile.ZIP_STORED

    rewrite_zip(src_name, dst_name, member, [(f"{root}/byteorder", b"big")])


zip_big_endian("dtypes_zip_p2.pt", "dtypes_zip_big_endian.pt")
rewrite_zip("nested_zip.pt", "nested_zip_deflated.pt",
            lambda name, data: (data, zipfile.ZIP_DEFLATED))


def legacy_big_endian(src_name, dst_name):
    """Rewrites a legacy file as a big-endian machine would have written it."""
    raw = open(os.path.join(OUT, src_name), "rb").read()
    stream = io.BytesIO(raw)
    pickles = []
    for _ in range(5):
        start = stream.tell()
        for op, arg, pos in pickletools.genops(stream):
            if op.name == "STOP":
                break
        pickles.append(raw[start:stream.tell()])
    types = storage_types(pickles[3])
    keys = pickle.loads(pickles[4])
    sys_info = pickle.loads(pickles[2])
    sys_info["little_endian"] = False
    pickles[2] = pickle.dumps(sys_info, protocol=2)
    out = b"".join(pickles)
    pos = stream.tell()
    for key in keys:
        (count,) = struct.unpack("<q", raw[pos:pos + 8])
        unit, element = STORAGE_UNITS[types[key]]
        size = count * element
        out += struct.pack(">q", count) + swap(raw[pos + 8:pos + 8 + size], unit)
        pos += 8 + size
    assert pos == len(raw), "walked every storage"
    open(os.path.join(OUT, dst_name), "wb").write(out)
    EXPECTED[dst_name] = dict(EXPECTED[src_name])


legacy_big_endian("dtypes_legacy_p2.pt", "dtypes_legacy_big_endian.pt")

# A sharded pytorch_model.bin with its index, in a folder of its own.
shard_dir = os.path.join(OUT, "sharded")
os.makedirs(shard_dir)
torch.manual_seed(3)
shards = [{"layer.0.weight": torch.randn(4, 4), "layer.0.bias": torch.randn(4)},
          {"layer.1.weight": torch.randn(2, 4).half(), "head": torch.arange(3)}]
weight_map = {}
all_tensors = {}
for i, shard in enumerate(shards):
    name = f"pytorch_model-{i + 1:05d}-of-{len(shards):05d}.bin"
    torch.save(shard, os.path.join(shard_dir, name))
    for k, t in shard.items():
        weight_map[k] = name
        all_tensors[k] = {"dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape),
                          "sha256": tensor_hash(t)}
json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map},
          open(os.path.join(shard_dir, "pytorch_model.bin.index.json"), "w"))
EXPECTED["sharded"] = {"tensors": all_tensors, "values": {}, "container": "zip"}

# A whole pickled nn.Module and a checkpoint with code in it: both must be refused.
torch.save(torch.nn.Linear(2, 2), os.path.join(OUT, "refused_module.pt"))


class Evil:
    def __reduce__(self):
        return (os.system, (f"touch {os.path.join(OUT, 'PWNED')}",))


torch.save({"w": torch.ones(2), "evil": Evil()}, os.path.join(OUT, "refused_evil_zip.pt"))
torch.save({"w": torch.ones(2), "evil": Evil()}, os.path.join(OUT, "refused_evil_legacy.pt"),
           _use_new_zipfile_serialization=False)

json.dump(EXPECTED, open(os.path.join(OUT, "expected.json"), "w"), indent=1)
