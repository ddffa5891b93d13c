// The plan of a cooperative load, computed identically on every rank from the checkpoint's
// metadata: the stored tensors to gather, grouped into rounds of bounded size, each round laid
// out as one buffer (tensors in name order, each at an aligned offset) and cut into one
// contiguous part per rank at row boundaries, so that the parts are near-equal (within a row
// of a tensor split by rows; tensors of packed or block dtypes are never split).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ballast/metadata.hpp"

namespace ballast::distributed {

// Rows [first_row, end_row) of dimension 0 of one stored tensor, read by one rank; `whole` when
// they are all of it (read without a Slice step). Lands at `offset` of the round buffer.
struct Piece {
  std::string tensor;
  int64_t first_row = 0;
  int64_t end_row = 0;
  bool whole = false;
  uint64_t offset = 0;
  uint64_t nbytes = 0;
};

struct PlannedTensor {
  std::string name;
  TensorInfo info;
  uint64_t offset = 0;  // in the round buffer
};

struct Round {
  std::vector<PlannedTensor> tensors;
  uint64_t nbytes = 0;                     // the round buffer's size, padding included
  std::vector<uint64_t> part_offsets;      // per rank: where its part starts
  std::vector<uint64_t> part_sizes;        // per rank: its part's bytes
  std::vector<std::vector<Piece>> pieces;  // per rank: what it reads
};

struct Plan {
  std::vector<Round> rounds;
  uint64_t tensor_bytes = 0;  // the stored bytes of every planned tensor
};

// Plans the gathering of `names` (each in meta.tensors) among `world` ranks, rounds of at most
// `round_bytes` (a larger tensor is a round of its own). Throws Error(not_found) for a name
// the checkpoint lacks.
Plan make_plan(const WeightMetadata& meta, const std::set<std::string>& names, int world,
               uint64_t round_bytes);

// A fingerprint of the plan's inputs (names, dtypes, shapes, sizes), equal on ranks that see
// the same checkpoint.
int64_t plan_fingerprint(const Plan& plan);

}  // namespace ballast::distributed
