// The values a restricted unpickler builds: plain Python data (None, bool, int, float, str,
// bytes, tuple, list, dict, set), references to allowlisted globals, and opaque objects that
// the torch hooks create (storages, tensors, dtypes).
//
// Values live in one arena and refer to each other by index, never by owning pointer: a
// hostile pickle can build cycles (a list appended to itself through the memo), and an arena
// frees them all at once without leaking or recursing. Whoever walks the values bounds the
// walk's depth, since a cycle has none.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ballast {

using PyId = uint32_t;

enum class PyKind : uint8_t {
  none,
  boolean,
  integer,      // fits in int64
  big_integer,  // `text` holds the little-endian two's-complement bytes
  floating,
  string,  // `text` is UTF-8 (or the raw bytes of a Python 2 str)
  bytes,
  tuple,
  list,
  dict,  // `items` holds key, value, key, value, ...
  set,
  global,  // `text` is "module.name"; `integer` is the hooks' tag for it
  object,  // made by the hooks: `text` names its type, `integer` indexes the hooks' table
};

std::string_view py_kind_name(PyKind kind);

struct PyValue {
  PyKind kind = PyKind::none;
  int64_t integer = 0;
  double floating = 0.0;
  std::string text;
  std::vector<PyId> items;
};

class PyArena {
 public:
  // None, False and True are shared, so a stream of them allocates nothing.
  PyArena() {
    add({});
    add({.kind = PyKind::boolean, .integer = 0});
    add({.kind = PyKind::boolean, .integer = 1});
  }

  PyId add(PyValue value) {
    values_.push_back(std::move(value));
    return static_cast<PyId>(values_.size() - 1);
  }
  PyValue& operator[](PyId id) { return values_[id]; }
  const PyValue& operator[](PyId id) const { return values_[id]; }
  size_t size() const { return values_.size(); }

  PyId none() const { return 0; }
  PyId boolean(bool v) const { return v ? 2 : 1; }
  PyId integer(int64_t v) { return add({.kind = PyKind::integer, .integer = v}); }
  PyId text(PyKind kind, std::string s) { return add({.kind = kind, .text = std::move(s)}); }
  PyId container(PyKind kind, std::vector<PyId> items = {}) {
    return add({.kind = kind, .items = std::move(items)});
  }

 private:
  std::vector<PyValue> values_;
};

}  // namespace ballast
