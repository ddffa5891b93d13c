// The exchange of a round when ranks keep shards (see load_cooperative.cpp): what each rank
// keeps of each tensor (all of it, or its torch.chunk of one dimension), where the kept bytes lie
// in its receive buffer, and which bytes of each reader's part go where. Readers hold row ranges
// in rank order, so what reader k sends a rank is one block of that rank's receive buffer, just
// after what reader k-1 sends: an all-to-all-v with no reordering on arrival.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "distributed/cooperative_plan.hpp"

namespace ballast::distributed {

// Tensor name -> the dimension whose chunk every rank keeps; a tensor not named is kept whole.
using ShardDims = std::map<std::string, int>;

// A rank's receive buffer for one round: per tensor of the round (in the round's order) its
// kept shape, bytes and offset (aligned as in the round buffer).
struct Layout {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<uint64_t> offsets;
  std::vector<uint64_t> sizes;
  uint64_t nbytes = 0;
};

Layout layout_of(const Round& round, const ShardDims& dims, int rank, int world);

// What this rank sends and receives in a round, as alltoallv's arguments, and how its send
// buffer is packed from its part.
struct Exchange {
  Layout mine;
  uint64_t send_bytes = 0;
  std::vector<uint64_t> send_counts, send_displacements, recv_counts, recv_displacements;
  struct Move {
    uint64_t from = 0;  // in this rank's part
    uint64_t to = 0;    // in the send buffer
    uint64_t nbytes = 0;
  };
  std::vector<Move> packing;
};

Exchange plan_exchange(const Round& round, const ShardDims& dims, int rank, int world);

}  // namespace ballast::distributed
