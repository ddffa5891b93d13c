"""ballast accepts exactly the safetensors headers that the official crate accepts (through
the safetensors package from PyPI): JSON padded with whitespace passes, a NUL byte or any other
byte after the JSON fails. Errors keep their text past a NUL byte in a tensor name.
"""
import json
import struct

import pytest
from conftest import run_cli

ENTRY = {"x": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}


def safetensors_bytes(header, data=b"abcd"):
    return struct.pack("<Q", len(header)) + header + data


def crate_accepts(blob):
    from safetensors.numpy import load

    try:
        load(blob)
        return True
    except Exception:  # the crate raises SafetensorError (or a plain Exception subclass)
        return False


HEADER = json.dumps(ENTRY).encode()
CASES = {
    "plain": HEADER,
    "space padding": HEADER + b"    ",
    "tab and newline padding": HEADER + b"\t\n\r ",
    "leading whitespace": b"  \n" + HEADER,
    "NUL padding": HEADER + b"\0\0\0",
    "NUL then garbage": HEADER + b"\0garbage",
    "garbage after the JSON": HEADER + b" x",
    "a second object": HEADER + b"{}",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_header_padding_is_judged_as_the_crate_judges_it(ballast_cli, tmp_path, case):
    blob = safetensors_bytes(CASES[case])
    path = tmp_path / "model.safetensors"
    path.write_bytes(blob)
    result = run_cli(ballast_cli, "inspect", path, check=False)
    expected = crate_accepts(blob)
    assert (result.returncode == 0) == expected, (case, result.stderr)
    if not expected:
        assert "invalid_format" in result.stderr
        assert str(path) in result.stderr


def test_an_error_survives_a_nul_byte_in_a_tensor_name(ballast_cli, tmp_path):
    header = json.dumps({"a\u0000b": {"dtype": "Q9", "shape": [4], "data_offsets": [0, 4]}})
    path = tmp_path / "model.safetensors"
    path.write_bytes(safetensors_bytes(header.encode()))
    result = run_cli(ballast_cli, "inspect", path, check=False)
    assert result.returncode != 0
    assert "Q9" in result.stderr  # the dtype named after the tensor is still in the message
    assert "a\\x00b" in result.stderr
