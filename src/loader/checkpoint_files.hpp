// Which files make up a local checkpoint: the rules for folders (safetensors wins over
// PyTorch .bin, as the Hugging Face tools do) and for `*.index.json` shard maps.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ballast/limits.hpp"

namespace ballast {

struct CheckpointFiles {
  std::vector<std::filesystem::path> shards;
  std::map<std::string, size_t, std::less<>> weight_map;  // tensor -> index into shards
  std::string metadata = "{}";                            // the index file's "metadata" object
};

// Resolves a local path: a folder, a shard index, or a single file.
CheckpointFiles resolve_checkpoint_files(const std::filesystem::path& path, const Limits& limits);

}  // namespace ballast
