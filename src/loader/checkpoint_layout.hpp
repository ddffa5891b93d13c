// Which objects of a Store make up a checkpoint, written once for every kind of source: the
// object the source names, or, when it is a `*.index.json`, the shards its weight map names
// beside it (each found by Store::sibling, so confined to the index's folder). A local folder
// is chosen among by loader/folder_choice (its rules are there); a Hub repository or
// quantization tag is first expanded by its store (Store::expand).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ballast/limits.hpp"
#include "ballast/metadata.hpp"
#include "io/os.hpp"
#include "io/store.hpp"

namespace ballast {

struct CheckpointLayout {
  std::vector<std::string> shards;                        // objects of the store, in order
  std::map<std::string, size_t, std::less<>> weight_map;  // tensor -> index into shards
  std::string metadata = "{}";                            // the index file's "metadata" object
  std::vector<IgnoredFile> ignored;  // a folder's weight-like files that are not used
};

// Reads only a shard index (if the source names one); no shard is opened. A local folder is
// listed through `os`.
CheckpointLayout resolve_layout(Store& store, const Limits& limits, const Os& os);

}  // namespace ballast
