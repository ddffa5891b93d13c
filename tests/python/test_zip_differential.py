"""One zip file, one meaning: ballast reads torch.save and numpy.savez archives as torch.load
(miniz) and numpy.load (Python's zipfile) read them, or refuses them.

Real archives written by Debian's torch 1.13 and numpy are mutated and combined at random
(seeded, a bounded count): end records in comments, concatenated and prepended archives,
decoy central directories, gaps, ZIP64 end records (consistent or not), fields of local headers, directory entries and end records
set to other values, names changed in one header or made to differ only in case, members
that shadow others. For every archive, either ballast refuses it (exit 1), or ballast and the
reference reader both accept it and agree on every tensor's name, dtype, shape and bytes; and
when the reference refuses, ballast refuses too.
"""
import hashlib
import json
import random
import struct
import subprocess

import pytest
from conftest import run_cli, run_debian_python

SEED = 20261207
MUTANTS_PER_BASE = 30

# Writes the base archives: two of each kind with the same names and shapes but other values
# (so their directories have the same size), each kind under the same file name so that
# torch's root folder is the same.
WRITE_BASES = r"""
import pathlib, sys, zipfile
import numpy as np, torch
out = pathlib.Path(sys.argv[1])
for variant, scale in (("a", 1), ("b", -3)):
    folder = out / variant
    folder.mkdir()
    torch.save({"w": torch.arange(6, dtype=torch.float32).reshape(2, 3) * scale,
                "b": torch.tensor([1, 2, 3], dtype=torch.int64) * scale,
                "h": (torch.ones(4, dtype=torch.bfloat16) * scale)}, folder / "model.pt")
    arrays = {"x": np.arange(5, dtype=np.int32) * scale,
              "y": np.full((2, 2), 0.5 * scale, dtype=np.float16)}
    np.savez(folder / "arrays.npz", **arrays)
    np.savez_compressed(folder / "packed.npz", **arrays)
    # An .npz whose key "x" is the bare member "x" for numpy, "x.npy" for a reader that
    # strips suffixes.
    with zipfile.ZipFile(folder / "shadow.npz", "w") as z:
        for name, value in (("x.npy", arrays["x"]), ("x", arrays["x"] + 7)):
            with z.open(name, "w") as f:
                np.lib.format.write_array(f, value)
"""

# Reads every archive named on the command line with the reference reader; prints JSON:
# {path: null (refused) or {name: [dtype, shape, sha256]}}.
READ_REFERENCE = r"""
import hashlib, json, sys, warnings
import numpy as np, torch
warnings.simplefilter("ignore")
DTYPES = {torch.float32: "f32", torch.int64: "i64", torch.bfloat16: "bf16",
          torch.float16: "f16", torch.int32: "i32"}
def torch_tensors(path):
    state = torch.load(path, map_location="cpu", weights_only=True)
    out = {}
    for name, t in state.items():
        raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        out[name] = [DTYPES[t.dtype], list(t.shape), hashlib.sha256(raw).hexdigest()]
    return out
def numpy_arrays(path):
    out = {}
    with np.load(path, allow_pickle=False) as z:
        for name in z.files:
            value = z[name]
            if not isinstance(value, np.ndarray):
                continue
            little = np.ascontiguousarray(value.astype(value.dtype.newbyteorder("<")))
            out[name] = [little.dtype.str, list(value.shape),
                         hashlib.sha256(little.tobytes()).hexdigest()]
    return out
results = {}
for path in sys.argv[1:]:
    try:
        results[path] = torch_tensors(path) if path.endswith(".pt") else numpy_arrays(path)
    except Exception:
        results[path] = None
print(json.dumps(results))
"""

NUMPY_DTYPES = {"f32": "<f4", "i64": "<i8", "i32": "<i4", "f16": "<f2", "bf16": None}


# --- a minimal zip layout reader, enough to know where the records of the base archives are

def end_record(b):
    return b.rfind(b"PK\x05\x06")


def directory(b):
    """(central directory offset, size, [(entry offset, entry length, name, local offset)])."""
    eocd = end_record(b)
    size, offset = struct.unpack_from("<II", b, eocd + 12)
    entries, at = [], offset
    while at < offset + size:
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", b, at + 28)
        (local,) = struct.unpack_from("<I", b, at + 42)
        length = 46 + name_len + extra_len + comment_len
        entries.append((at, length, b[at + 46:at + 46 + name_len], local))
        at += length
    return offset, size, entries


def shift_directory(cd, entries_base, delta):
    """The directory bytes `cd` (whose entries start at `entries_base` in their file) with
    every local header offset moved by `delta`."""
    cd = bytearray(cd)
    at = 0
    while at < len(cd):
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", cd, at + 28)
        (local,) = struct.unpack_from("<I", cd, at + 42)
        struct.pack_into("<I", cd, at + 42, local + delta)
        at += 46 + name_len + extra_len + comment_len
    return bytes(cd)


def end_bytes(entries, size, offset, comment=b""):
    return struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, entries, entries, size, offset,
                       len(comment)) + comment


def parts(b):
    cd_offset, cd_size, entries = directory(b)
    return b[:cd_offset], b[cd_offset:cd_offset + cd_size], len(entries)


# --- constructions: each takes (rng, a, b) (two archives of one kind) and returns bytes

def second_end_record_in_comment(rng, a, b, trailing=None):
    """a's members, b's members, a's directory, a's end record whose comment holds b's
    directory and end record (and `trailing` bytes more, so that only a's comment ends the
    file)."""
    a_locals, a_cd, a_n = parts(a)
    b_locals, b_cd, b_n = parts(b)
    body = a_locals + b_locals + a_cd
    b_cd_at = len(body) + 22
    tail = shift_directory(b_cd, 0, len(a_locals)) + end_bytes(b_n, len(b_cd), b_cd_at)
    tail += b"!" * (rng.choice([0, 1]) if trailing is None else trailing)
    return body + end_bytes(a_n, len(a_cd), len(a_locals) + len(b_locals), tail)


def concatenated(rng, a, b):
    """a then b, b's offsets either its own (zipfile corrects them) or shifted past a."""
    if rng.random() < 0.5:
        return a + b
    b_locals, b_cd, b_n = parts(b)
    return (a + b_locals + shift_directory(b_cd, 0, len(a))
            + end_bytes(b_n, len(b_cd), len(a) + len(b_locals)))


def prepended(rng, a, _b):
    junk = rng.choice([b"#!/bin/sh\n", b"\0" * 64, b"PK\x03\x04"])
    if rng.random() < 0.5:
        return junk + a  # offsets as written: zipfile corrects them, miniz does not
    a_locals, a_cd, a_n = parts(a)
    return (junk + a_locals + shift_directory(a_cd, 0, len(junk))
            + end_bytes(a_n, len(a_cd), len(junk) + len(a_locals)))


def decoy_directory(rng, a, b):
    """b's directory (pointing at b's members) where a's end record says its directory is,
    a's own directory right before the end record: miniz reads b, zipfile a."""
    a_locals, a_cd, a_n = parts(a)
    b_locals, b_cd, _ = parts(b)
    decoy_at = len(a_locals) + len(b_locals)
    return (a_locals + b_locals + shift_directory(b_cd, 0, len(a_locals)) + a_cd
            + end_bytes(a_n, len(a_cd), decoy_at))


def gap(rng, a, _b):
    """Bytes inserted between two members or before the directory, offsets fixed up."""
    a_locals, a_cd, a_n = parts(a)
    _, _, entries = directory(a)
    cut = rng.choice([e[3] for e in entries[1:]] + [len(a_locals)])
    junk = b"\0" * rng.choice([1, 8, 30])
    cd = bytearray(a_cd)
    for at, _, _, local in entries:
        if local >= cut:
            struct.pack_into("<I", cd, at - len(a_locals) + 42, local + len(junk))
    locals_ = a_locals[:cut] + junk + a_locals[cut:]
    return locals_ + bytes(cd) + end_bytes(a_n, len(a_cd), len(locals_))


def end_record_comment(rng, a, _b):
    """A comment that ends the file, too short, too long, or holding a signature."""
    eocd = end_record(a)
    comment = rng.choice([b"hello", b"PK\x05\x06", b"PK\x05\x06" + b"\0" * 18])
    stated = len(comment) + rng.choice([0, 0, -1, 1])
    return a[:eocd + 20] + struct.pack("<H", max(stated, 0)) + comment


def zip64_end_records(rng, a, _b):
    """a with ZIP64 end records (a ZIP64 end record and its locator before the end record),
    the plain record's fields saturated or not, and sometimes one field of the three records
    set to another value."""
    a_locals, a_cd, a_n = parts(a)
    record_at = len(a_locals) + len(a_cd)
    record = bytearray(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, a_n, a_n,
                                   len(a_cd), len(a_locals)))
    locator = bytearray(struct.pack("<IIQI", 0x07064B50, 0, record_at, 1))
    saturate = rng.random() < 0.7
    end = bytearray(end_bytes(0xFFFF if saturate else a_n, 0xFFFFFFFF if saturate else len(a_cd),
                              0xFFFFFFFF if saturate else len(a_locals)))
    if rng.random() < 0.6:
        target, offset, kind = rng.choice([
            (record, 4, "Q"), (record, 16, "I"), (record, 24, "Q"), (record, 32, "Q"),
            (record, 40, "Q"), (record, 48, "Q"), (locator, 4, "I"), (locator, 8, "Q"),
            (locator, 16, "I"), (end, 8, "H"), (end, 10, "H"), (end, 12, "I"), (end, 16, "I")])
        (old,) = struct.unpack_from("<" + kind, target, offset)
        top = (1 << (8 * struct.calcsize(kind))) - 1
        value = rng.choice([0, 1, 2, old + 1, old - 1, old + 56, old - 56, top])
        struct.pack_into("<" + kind, target, offset, value & top)
    return a_locals + a_cd + bytes(record) + bytes(locator) + bytes(end)


LOCAL_FIELDS = [(6, "H"), (8, "H"), (14, "I"), (18, "I"), (22, "I"), (26, "H"), (28, "H")]
CENTRAL_FIELDS = [(8, "H"), (10, "H"), (16, "I"), (20, "I"), (24, "I"), (28, "H"), (30, "H"),
                  (32, "H"), (34, "H"), (42, "I")]
END_FIELDS = [(4, "H"), (6, "H"), (8, "H"), (10, "H"), (12, "I"), (16, "I"), (20, "H")]


def field(rng, a, _b):
    """One field of a local header, directory entry or the end record set to another value."""
    _, _, entries = directory(a)
    place = rng.choice(["local", "central", "end"])
    if place == "local":
        base, (offset, kind) = rng.choice(entries)[3], rng.choice(LOCAL_FIELDS)
    elif place == "central":
        base, (offset, kind) = rng.choice(entries)[0], rng.choice(CENTRAL_FIELDS)
    else:
        base, (offset, kind) = end_record(a), rng.choice(END_FIELDS)
    (old,) = struct.unpack_from("<" + kind, a, base + offset)
    top = 0xFFFF if kind == "H" else 0xFFFFFFFF
    value = rng.choice([0, 1, 8, 0x800, 0x808, top, old + 1, old - 1, old + 16, old ^ 0x20,
                        rng.randrange(top + 1)])
    out = bytearray(a)
    struct.pack_into("<" + kind, out, base + offset, value & top)
    return bytes(out)


def renamed(rng, a, _b):
    """A member renamed (same length): in its local header only, in the directory only, in
    both; to another member's name, or to it in other case."""
    _, _, entries = directory(a)
    at, _, name, local = rng.choice(entries)
    same_length = [e[2] for e in entries if len(e[2]) == len(name) and e[2] != name]
    choices = [name.upper(), name[:-1] + b"Z"] + same_length + [n.upper() for n in same_length]
    new = rng.choice(choices)
    out = bytearray(a)
    where = rng.choice(["local", "central", "both"])
    if where in ("local", "both"):
        out[local + 30:local + 30 + len(name)] = new
    if where in ("central", "both"):
        out[at + 46:at + 46 + len(name)] = new
    return bytes(out)


def reordered(rng, a, _b):
    """The directory's entries in another order (torch takes its root from the first)."""
    a_locals, a_cd, a_n = parts(a)
    _, _, entries = directory(a)
    pieces = [a_cd[at - len(a_locals):at - len(a_locals) + length] for at, length, _, _ in entries]
    rng.shuffle(pieces)
    return a_locals + b"".join(pieces) + end_bytes(a_n, len(a_cd), len(a_locals))


def with_member(rng, a, _b):
    """a with one more member appended by zipfile, holding another member's bytes: a record
    torch.load treats specially (constants.pkl: a TorchScript archive), a case twin of a
    member, or a bare-named twin of an .npy member."""
    import io
    import zipfile

    original = zipfile.ZipFile(io.BytesIO(a))
    names = original.namelist()
    root = names[0].split("/")[0] + "/" if "/" in names[0] else ""
    extra = rng.choice([root + "constants.pkl", rng.choice(names).upper(),
                        rng.choice(names).removesuffix(".npy")])
    content = original.read(rng.choice(names))  # for an .npz, another array
    out = io.BytesIO(a)
    with zipfile.ZipFile(out, "a") as z:
        z.writestr(extra, content)
    return out.getvalue()


def truncated(rng, a, _b):
    return a[:rng.randrange(len(a))]


CONSTRUCTIONS = [second_end_record_in_comment, concatenated, prepended, decoy_directory, gap,
                 end_record_comment, zip64_end_records, zip64_end_records, field, field, field,
                 renamed, renamed, reordered, with_member, truncated]


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    """[(path, kind)] for the base archives and their mutants, with the reference's reading."""
    root = tmp_path_factory.mktemp("zips")
    run_debian_python(WRITE_BASES, root)
    rng = random.Random(SEED)
    cases = []
    for name in ("model.pt", "arrays.npz", "packed.npz", "shadow.npz"):
        a, b = (root / "a" / name).read_bytes(), (root / "b" / name).read_bytes()
        suffix = name.rsplit(".", 1)[1]
        cases.append((root / "a" / name, "base"))
        for i in range(MUTANTS_PER_BASE):
            construction = rng.choice(CONSTRUCTIONS)
            path = root / f"{name.split('.')[0]}-{i}-{construction.__name__}.{suffix}"
            path.write_bytes(construction(rng, a, b))
            cases.append((path, construction.__name__))
    reference = json.loads(run_debian_python(READ_REFERENCE, *[p for p, _ in cases]))
    return cases, reference


def ballast_tensors(cli, path):
    """ballast's reading of `path`: ({name: [dtype, shape, sha256]}, stderr), or (None,
    stderr) when it refuses the file. Messages may quote a name's bytes, so they are decoded
    leniently."""
    result = subprocess.run([cli, "hash", "--json", str(path)], capture_output=True, timeout=60)
    stderr = result.stderr.decode(errors="replace")
    if result.returncode != 0:
        assert result.returncode == 1, (path, result.returncode, stderr)
        return None, stderr
    out = {}
    for name, t in json.loads(result.stdout)["tensors"].items():
        dtype = t["dtype"] if path.suffix == ".pt" else NUMPY_DTYPES.get(t["dtype"], t["dtype"])
        out[name] = [dtype, t["shape"], t["sha256"]]
    return out, stderr


def test_base_archives_are_read_alike(ballast_cli, archives):
    """What torch.save and numpy.savez write loads; the shadowing .npz is refused."""
    cases, reference = archives
    for path, construction in cases:
        if construction == "base":
            ours, stderr = ballast_tensors(ballast_cli, path)
            if path.name == "shadow.npz":
                assert ours is None and "both answer numpy's key 'x'" in stderr, stderr
                continue
            assert ours is not None, stderr
            assert ours == reference[str(path)], path


def test_every_mutant_is_refused_or_read_as_the_reference_reads_it(ballast_cli, archives):
    cases, reference = archives
    disagreements, accepted = [], 0
    for path, construction in cases:
        theirs = reference[str(path)]
        ours, stderr = ballast_tensors(ballast_cli, path)
        if ours is None:
            continue
        accepted += 1
        if theirs is None:
            disagreements.append(f"{path.name}: the reference refuses it, ballast reads {ours}")
        elif ours != theirs:
            disagreements.append(f"{path.name}: ballast reads {ours}, the reference {theirs}")
    assert not disagreements, "\n".join(disagreements)
    assert accepted > 0  # some mutants (e.g. a changed timestamp-free field) stay readable


def test_the_named_ambiguities_are_refused_with_the_offset(ballast_cli, archives, tmp_path):
    """The issue's two constructions: a second end record in the first one's comment (with a
    byte after it), and an end record whose directory offset names a decoy directory."""
    cases, _ = archives
    root = cases[0][0].parent.parent
    rng = random.Random(SEED)
    for name in ("model.pt", "arrays.npz"):
        a, b = (root / "a" / name).read_bytes(), (root / "b" / name).read_bytes()
        for construction in (second_end_record_in_comment, decoy_directory):
            path = tmp_path / f"{construction.__name__}-{name}"
            blob = (construction(rng, a, b, trailing=1)
                    if construction is second_end_record_in_comment else construction(rng, a, b))
            path.write_bytes(blob)
            result = run_cli(ballast_cli, "inspect", path, check=False)
            assert result.returncode == 1, (path.name, result.stdout)
            assert "invalid_format" in result.stderr and "offset" in result.stderr, result.stderr
            assert str(path) in result.stderr, result.stderr
