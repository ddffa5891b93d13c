// The values a restricted unpickler builds: plain Python data (None, bool, int, float, str,
// bytes, tuple, list, dict, set), references to allowlisted globals, and opaque objects that
// the torch hooks create (storages, tensors, dtypes).
//
// Values live in one arena and refer to each other by index, never by owning pointer: a
// hostile pickle can build cycles (a list appended to itself through the memo), and an arena
// frees them all at once without leaking or recursing. Whoever walks the values bounds the
// walk's depth, since a cycle has none.
//
// Every value added is charged to a PickleBudget (its record, its text and its item list), so
// what a pickle builds stays a bounded multiple of its size. Immutable values that cost
// nothing to share are shared: None, the booleans, the empty tuple and the ints 0-255.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/pytorch/pickle_budget.hpp"

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
  explicit PyArena(PickleBudget& budget) : budget_(budget) {
    add({});
    add({.kind = PyKind::boolean, .integer = 0});
    add({.kind = PyKind::boolean, .integer = 1});
    add({.kind = PyKind::tuple});
  }

  PyId add(PyValue value) {
    charge(sizeof(PyValue) + value.text.size() + value.items.size() * sizeof(PyId),
           py_kind_name(value.kind));
    values_.push_back(std::move(value));
    return static_cast<PyId>(values_.size() - 1);
  }
  PyValue& operator[](PyId id) { return values_[id]; }
  const PyValue& operator[](PyId id) const { return values_[id]; }
  size_t size() const { return values_.size(); }

  PyId none() const { return 0; }
  PyId boolean(bool v) const { return v ? 2 : 1; }
  PyId integer(int64_t v) {
    if (v < 0 || v >= static_cast<int64_t>(small_ints_.size()))
      return add({.kind = PyKind::integer, .integer = v});
    PyId& shared = small_ints_[static_cast<size_t>(v)];
    if (shared == 0) shared = add({.kind = PyKind::integer, .integer = v});
    return shared;
  }
  PyId text(PyKind kind, std::string s) { return add({.kind = kind, .text = std::move(s)}); }
  PyId container(PyKind kind, std::vector<PyId> items = {}) {
    if (kind == PyKind::tuple && items.empty()) return kEmptyTuple;
    return add({.kind = kind, .items = std::move(items)});
  }
  // Appends to a list, set or dict's items.
  void append(PyId container, std::span<const PyId> items) {
    charge(items.size() * sizeof(PyId), "container items");
    std::vector<PyId>& to = values_[container].items;
    to.insert(to.end(), items.begin(), items.end());
  }

  // Charges memory materialised outside the arena (memo entries, hook records, names).
  void charge(uint64_t bytes, std::string_view what) { budget_.charge(bytes, what); }

 private:
  static constexpr PyId kEmptyTuple = 3;

  PickleBudget& budget_;
  std::vector<PyValue> values_;
  std::array<PyId, 256> small_ints_{};
};

}  // namespace ballast
