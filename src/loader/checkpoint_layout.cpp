// Checkpoint layout over a Store (see checkpoint_layout.hpp).
#include "loader/checkpoint_layout.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "loader/folder_choice.hpp"
#include "loader/shard_index.hpp"

namespace ballast {
namespace {

namespace fs = std::filesystem;

CheckpointLayout read_index(Store& store, const std::string& index, const Limits& limits) {
  const std::string where = store.describe(index);
  ShardIndex parsed =
      parse_shard_index(store.read_small(index, limits.max_header_bytes), where, limits);
  CheckpointLayout layout;
  for (const auto& name : parsed.shards) layout.shards.push_back(store.sibling(index, name));
  layout.weight_map = std::move(parsed.weight_map);
  layout.metadata = std::move(parsed.metadata);
  return layout;
}

// The path with its symlinks resolved, or as it is when it cannot be.
fs::path resolved(const Os& os, const fs::path& path) { return os.canonical(path).value_or(path); }

CheckpointLayout resolve_folder(Store& store, const fs::path& folder, const Limits& limits,
                                const Os& os) {
  FolderChoice choice = choose_folder_files(folder, os);
  CheckpointLayout layout;
  if (choice.index) {
    layout = read_index(store, choice.index->string(), limits);
    std::set<fs::path> named;
    for (const auto& shard : layout.shards) named.insert(resolved(os, shard));
    for (const auto& path : choice.family)
      if (!named.contains(resolved(os, path)))
        choice.ignored.push_back({path.filename().string(), "not named in the shard index"});
  } else {
    for (const auto& path : choice.files) layout.shards.push_back(path.string());
  }
  std::sort(choice.ignored.begin(), choice.ignored.end(),
            [](const IgnoredFile& a, const IgnoredFile& b) { return a.name < b.name; });
  layout.ignored = std::move(choice.ignored);
  return layout;
}

}  // namespace

CheckpointLayout resolve_layout(Store& store, const Limits& limits, const Os& os) {
  std::vector<std::string> objects = store.expand(store.named());
  if (objects.size() == 1 && store.is_folder(objects[0]))
    return resolve_folder(store, objects[0], limits, os);
  if (objects.size() == 1 && store.path(objects[0]).ends_with(".index.json"))
    return read_index(store, objects[0], limits);
  CheckpointLayout layout;
  layout.shards = std::move(objects);  // a named file is that file, a split shard included
  return layout;
}

}  // namespace ballast
