// `ballast inspect --shard RANK/WORLD[:DIM]`: what each tensor-parallel rank of a checkpoint
// reads when every tensor is loaded with `shard:RANK/WORLD:DIM` (tensors with too few
// dimensions are read whole, as replicated tensors are), from a source it cannot map: the
// ranges and bytes per tensor and in total. RANK may be `all`.
#pragma once

#include <optional>
#include <string>

#include "ballast/metadata.hpp"

namespace ballast::cli {

struct ShardOption {
  std::optional<int> rank;  // nullopt: every rank
  int world = 1;
  int dim = 0;
};

// Throws Error(invalid_argument) for text that is not RANK/WORLD[:DIM] with 0 <= RANK < WORLD.
ShardOption parse_shard_option(const std::string& text);

void print_shard_plan(const std::string& source, const WeightMetadata& meta,
                      const ShardOption& shard, bool json);

}  // namespace ballast::cli
