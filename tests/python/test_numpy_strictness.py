"""ballast is as strict as numpy's own reader (numpy.load, allow_pickle=False) on .npy headers:
every header numpy refuses, ballast refuses too (with invalid_format or unsupported naming the
file), and every header numpy's writer could have written, ballast accepts. Where ballast is
stricter, the case says why: bytes after the array's data, a comment or a duplicate key in the
header dict (a Python literal to numpy, which ast.literal_eval allows), and structured dtypes
(not tensors).
"""
import struct

import pytest
from conftest import run_cli

PLAIN = "{'descr': '<u1', 'fortran_order': False, 'shape': (4,), }"


def npy(header, version=(1, 0), data=b"\x01\x02\x03\x04", pad=b" ", newline=True, align=64):
    """A .npy file with `header` as its dict text, padded as told."""
    text = header.encode("latin1")
    length_bytes = 2 if version[0] == 1 else 4
    total = 8 + length_bytes + len(text) + (1 if newline else 0)
    text += pad * ((-total) % align) + (b"\n" if newline else b"")
    length = struct.pack("<H" if length_bytes == 2 else "<I", len(text))
    return b"\x93NUMPY" + bytes(version) + length + text + data


# name: (file bytes, what ballast does when numpy accepts: None = the same, else why it refuses)
CASES = {
    "plain": (npy(PLAIN), None),
    "no trailing comma": (npy(PLAIN.replace(", }", "}")), None),
    "double quotes": (npy(PLAIN.replace("'", '"')), None),
    "no newline": (npy(PLAIN, newline=False), None),
    "tab padding": (npy(PLAIN, pad=b"\t"), None),
    "16-byte alignment": (npy(PLAIN, align=16), None),
    "version 2.0": (npy(PLAIN, version=(2, 0)), None),
    "version 3.0": (npy(PLAIN, version=(3, 0)), None),
    "scalar": (npy(PLAIN.replace("(4,)", "()"), data=b"\x01"), None),
    "big endian": (npy(PLAIN.replace("<u1", ">u2").replace("(4,)", "(2,)")), None),
    "version 4.0": (npy(PLAIN, version=(4, 0)), None),
    "NUL padding": (npy(PLAIN, pad=b"\0"), None),
    "an extra key": (npy(PLAIN.replace("}", "'x': 1, }")), None),
    "a missing key": (npy("{'descr': '<u1', 'shape': (4,), }"), None),
    "fortran_order 0": (npy(PLAIN.replace("False", "0")), None),
    "shape as a list": (npy(PLAIN.replace("(4,)", "[4]")), None),
    "negative dimension": (npy(PLAIN.replace("(4,)", "(-4,)")), None),
    "float dimension": (npy(PLAIN.replace("(4,)", "(4.0,)")), None),
    "bool dimension": (npy(PLAIN.replace("(4,)", "(True,)")), None),
    "an expression": (npy(PLAIN.replace("(4,)", "(2*2,)")), None),
    "unknown descr": (npy(PLAIN.replace("<u1", "<q9")), None),
    "object array": (npy(PLAIN.replace("'<u1'", "'|O'").replace("(4,)", "(1,)")), None),
    "short data": (npy(PLAIN, data=b"\x01\x02"), None),
    "bytes after the data": (npy(PLAIN, data=b"\x01\x02\x03\x04extra"),
                             "a data length other than the shape's is refused both ways"),
    "a comment": (npy(PLAIN + " # note"), "the header is a dict literal, not Python source"),
    "a duplicate key": (npy(PLAIN.replace("{", "{'descr': '<u1', ")),
                        "a key twice is ambiguous; numpy keeps the last"),
    "structured dtype": (npy(PLAIN.replace("'<u1'", "[('a', '<u1')]")),
                         "a record array is not a tensor (unsupported)"),
}


def numpy_accepts(path):
    import numpy

    try:
        numpy.load(path, allow_pickle=False)
        return True
    except Exception:  # ValueError, TypeError, SyntaxError...: numpy refused the file
        return False


@pytest.mark.parametrize("case", sorted(CASES))
def test_npy_headers_are_judged_at_least_as_strictly_as_numpy(ballast_cli, tmp_path, case):
    blob, stricter = CASES[case]
    path = tmp_path / "a.npy"
    path.write_bytes(blob)
    result = run_cli(ballast_cli, "inspect", path, check=False)
    accepted = result.returncode == 0
    expected = numpy_accepts(path) and stricter is None
    assert accepted == expected, (case, stricter, result.stderr)
    if not accepted:
        assert "invalid_format" in result.stderr or "unsupported" in result.stderr
        assert str(path) in result.stderr
    if stricter is not None:
        assert numpy_accepts(path), f"{case}: numpy refuses it too, so it is not stricter"
