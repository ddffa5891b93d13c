// Which remote objects make up a checkpoint: one URL, or a `*.index.json` URL whose shards
// lie beside it; a Hugging Face Hub file, index or whole repository (see hub_client.hpp); an
// S3 object, or a `*.index.json` key whose shards are keys beside it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ballast/limits.hpp"
#include "ballast/source.hpp"
#include "loader/checkpoint.hpp"

namespace ballast {

struct RemoteShards {
  std::vector<ShardLocation> shards;
  std::map<std::string, size_t, std::less<>> weight_map;  // tensor -> index into shards
  std::string metadata = "{}";
};

// Reads a shard index if the source names one (only its bytes); shards open lazily.
RemoteShards resolve_remote_shards(const WeightSource& source,
                                   std::shared_ptr<const RemoteContext> remote,
                                   const Limits& limits, ReadMode read_mode);

}  // namespace ballast
