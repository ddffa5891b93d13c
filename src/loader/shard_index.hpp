// A shard index (`*.index.json`, as save_pretrained writes it): the `weight_map` of each tensor
// to the shard file that holds it, plus the index's own `metadata`.
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ballast/limits.hpp"

namespace ballast {

// A parsed `*.index.json`: the shard file names (relative to the index) in first-use order.
struct ShardIndex {
  std::vector<std::string> shards;
  std::map<std::string, size_t, std::less<>> weight_map;  // tensor -> index into shards
  std::string metadata = "{}";
};

// Parses the bytes of a shard index; `where` names it in errors. Nesting deeper than
// limits.max_json_depth is Error(limit_exceeded).
ShardIndex parse_shard_index(std::span<const std::byte> bytes, const std::string& where,
                             const Limits& limits);

}  // namespace ballast
