// Which files make up a checkpoint: a named file, a local folder (its rules are in
// folder_choice.hpp) or a `*.index.json` shard map (local or remote).
#pragma once

#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ballast/limits.hpp"
#include "ballast/metadata.hpp"

namespace ballast {

struct CheckpointFiles {
  std::vector<std::filesystem::path> shards;
  std::map<std::string, size_t, std::less<>> weight_map;  // tensor -> index into shards
  std::string metadata = "{}";                            // the index file's "metadata" object
  std::vector<IgnoredFile> ignored;  // a folder's weight-like files that are not used
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
