// OpCounter: a test-only seam for checking that parsers stay linear in their input. Parsers
// count their units of work with count_op() (opcodes, metadata entries, visits, and every key
// comparison made by a lookup); a test opens an OpCounter on its thread around a parse and
// compares the counts of inputs 1x and 10x as large. With no counter open nothing is counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

#include "util/keyed_hash.hpp"

namespace ballast {

class OpCounter {
 public:
  OpCounter() : previous_(current_) { current_ = this; }
  ~OpCounter() { current_ = previous_; }
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;

  uint64_t count() const { return count_; }
  static void add(uint64_t n) {
    if (current_) current_->count_ += n;
  }

 private:
  inline static thread_local OpCounter* current_ = nullptr;
  OpCounter* previous_;
  uint64_t count_ = 0;
};

inline void count_op(uint64_t n = 1) { OpCounter::add(n); }

// Hashing and equality for string-keyed lookups of names read from files (heterogeneous: a
// string_view finds a std::string key): the hash is keyed per process (keyed_hash.hpp), so a
// file cannot choose names that collide; the equality counts every comparison it makes.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return static_cast<size_t>(keyed_hash(s)); }
};
struct CountedEqual {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const {
    count_op();
    return a == b;
  }
};

}  // namespace ballast
