// PyLiteral: a strict parser for the Python literal subset that .npy headers use, so the
// header dict is read without any Python evaluation.
//
// Accepted: 'str' / "str" (optional u prefix, simple escapes), integers (optional sign and a
// Python 2 `L` suffix, at most int64), True, False, None, tuples, lists and dicts with string
// keys; trailing commas; whitespace between tokens. `(x)` is x, as in Python. Nesting is
// bounded; duplicate dict keys are refused. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ballast {

struct PyLiteral {
  enum class Kind : uint8_t { string, integer, boolean, none, tuple, list, dict };

  Kind kind = Kind::none;
  std::string text;               // string
  int64_t integer = 0;            // integer
  bool boolean = false;           // boolean
  std::vector<PyLiteral> items;   // tuple, list; a dict's values, in source order
  std::vector<std::string> keys;  // dict: keys[i] names items[i]
};

struct PyLiteralError {
  std::string message;
  size_t position;  // byte offset in the text
  bool too_deep;    // nesting passed max_depth
};

// Parses all of `text` (surrounding whitespace allowed). Throws PyLiteralError.
PyLiteral parse_py_literal(std::string_view text, uint32_t max_depth);

}  // namespace ballast
