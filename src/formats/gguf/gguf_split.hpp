// GGUF split files (llama.cpp `gguf-split`): a model stored as NAME-00001-of-0000N.gguf ...
// NAME-0000N-of-0000N.gguf, each shard a complete GGUF file holding some of the tensors, with
// the KV pairs split.no (u16, 0-based shard index), split.count (u16, shard count; 0 in a file
// merged back by `gguf-split --merge`) and split.tensors.count (i32, tensors in all shards).
//
// The GGUF parser parses one shard; the checkpoint layer uses gguf_split_siblings to find the
// others. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ballast {

struct GgufSplitName {
  std::string prefix;  // everything before "-NNNNN-of-NNNNN.gguf", folders included
  uint32_t index;      // 1-based, as in the file name
  uint32_t count;
};

// Parses "PREFIX-00002-of-00003.gguf" (5 or more digits each, 1 <= index <= count <= 65535).
std::optional<GgufSplitName> parse_gguf_split_name(std::string_view filename);

// All shard names of the split that `filename` (normally the first shard) belongs to, in
// order, in the same folder and spelled the way llama.cpp writes them ("%s-%05d-of-%05d.gguf");
// empty when `filename` is not a split name.
std::vector<std::string> gguf_split_siblings(std::string_view filename);

}  // namespace ballast
