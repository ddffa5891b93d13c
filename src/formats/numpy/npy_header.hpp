// The .npy header (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
//
//   [6]  magic "\x93NUMPY"
//   [2]  major, minor version: 1.0, 2.0 or 3.0
//   [2]  (v1) or [4] (v2, v3) little-endian header length HLEN
//   [HLEN] a Python dict literal, latin-1 (v1, v2) or UTF-8 (v3), padded with spaces and '\n':
//          {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//   [rest] the array data, exactly prod(shape) * itemsize bytes
//
// read_npy_header validates all of it (lengths bounded by Limits, dict strict, dims bounded and
// overflow-checked, the data exactly filling the source) and returns the tensor's layout, or
// says why the descr is not a tensor dtype (strings, dates, structured records). Object arrays
// (pickles) always throw. Pure function of the ByteSource; thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "ballast/byte_source.hpp"
#include "ballast/limits.hpp"
#include "ballast/parser.hpp"

namespace ballast {

struct NpyHeader {
  std::string descr;  // as written ('<f4'; a list's text for structured dtypes)
  // Why descr is not a tensor dtype; empty for tensors. A caller may skip such arrays.
  std::string unsupported_reason;
  DType dtype = DType::u8;
  ByteOrder byte_order = ByteOrder::little;
  bool fortran_order = false;
  Shape shape;
  uint64_t data_offset = 0;
  uint64_t nbytes = 0;
};

// True when `head` starts with the .npy magic.
bool has_npy_magic(std::span<const std::byte> head);

// Throws Error(invalid_format | limit_exceeded | unsupported) naming source.name() and the
// byte offset. Unsupported non-object dtypes are returned with unsupported_reason set (their
// data size is not checked).
NpyHeader read_npy_header(const ByteSource& source, const Limits& limits);

// Element strides of a Fortran-order (column-major) array of `shape`, which must hold at
// least one element (a validated header's shape).
std::vector<int64_t> fortran_strides(const Shape& shape);

}  // namespace ballast
