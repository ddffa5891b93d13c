// Which files make up a checkpoint: the rules for local folders (safetensors wins over
// PyTorch .bin, as the Hugging Face tools do) and for `*.index.json` shard maps (local or remote).
#pragma once

#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ballast/limits.hpp"

namespace ballast {

struct CheckpointFiles {
  std::vector<std::filesystem::path> shards;
  std::map<std::string, size_t, std::less<>> weight_map;  // tensor -> index into shards
  std::string metadata = "{}";                            // the index file's "metadata" object
};

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

// Resolves a local path: a folder, a shard index, or a single file.
CheckpointFiles resolve_checkpoint_files(const std::filesystem::path& path, const Limits& limits);

}  // namespace ballast
