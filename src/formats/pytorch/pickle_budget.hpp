// PickleBudget: the bytes a checkpoint's pickles may make ballast materialise, bounded by
// what the input holds. Every value the unpickler builds, every copy an allowed call makes,
// every storage and tensor record, and every name and metadata value collected from the
// object graph is charged here, so a value reached many times (memo, shared references,
// repeated calls, a big key shared by nested containers) cannot multiply memory.
//
// The budget is 16 MiB plus Limits::max_pickle_amplification bytes per pickle byte, and at
// most Limits::max_pickle_materialized_bytes; crossing it is Error(limit_exceeded).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ballast/limits.hpp"

namespace ballast {

class PickleBudget {
 public:
  // `pickle_bytes`: the size of the input the pickles come from; `source` names it in errors.
  PickleBudget(const Limits& limits, uint64_t pickle_bytes, std::string source);

  // Adds `bytes` materialised for `what`; throws Error(limit_exceeded) past the budget, naming
  // the source (the unpickler adds the opcode's offset).
  void charge(uint64_t bytes, std::string_view what);

  uint64_t used() const { return used_; }
  uint64_t limit() const { return limit_; }

 private:
  uint64_t limit_;
  uint64_t used_ = 0;
  std::string source_;
};

}  // namespace ballast
