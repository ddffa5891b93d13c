// Local checkpoint file discovery (see checkpoint_files.hpp).
#include "loader/checkpoint_files.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "io/folder_opener.hpp"
#include "loader/folder_choice.hpp"
#include "util/bounded_json.hpp"

namespace ballast {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& s, std::string_view suffix) { return s.ends_with(suffix); }

CheckpointFiles read_index(const fs::path& index_path, const Limits& limits) {
  auto bytes = read_small_file(index_path, limits.max_header_bytes, index_path.string());
  ShardIndex index = parse_shard_index(bytes, index_path.string(), limits);
  const fs::path folder = index_path.parent_path().empty() ? "." : index_path.parent_path();
  CheckpointFiles files;
  for (const auto& name : index.shards) files.shards.push_back(resolve_inside(folder, name));
  files.weight_map = std::move(index.weight_map);
  files.metadata = std::move(index.metadata);
  return files;
}

CheckpointFiles resolve_folder(const fs::path& folder, const Limits& limits) {
  FolderChoice choice = choose_folder_files(folder);
  CheckpointFiles files;
  if (choice.index) {
    files = read_index(*choice.index, limits);
    std::set<fs::path> named;
    for (const auto& shard : files.shards) named.insert(fs::weakly_canonical(shard));
    for (const auto& path : choice.family)
      if (!named.contains(fs::weakly_canonical(path)))
        choice.ignored.push_back({path.filename().string(), "not named in the shard index"});
  } else {
    files.shards = std::move(choice.files);
  }
  std::sort(choice.ignored.begin(), choice.ignored.end(),
            [](const IgnoredFile& a, const IgnoredFile& b) { return a.name < b.name; });
  files.ignored = std::move(choice.ignored);
  return files;
}

}  // namespace

ShardIndex parse_shard_index(std::span<const std::byte> bytes, const std::string& where,
                             const Limits& limits) {
  // Bounded nesting: serializing "metadata" recurses once per level.
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const JsonProblem problem = check_json(text, limits.max_json_depth);
  if (problem.kind == JsonProblem::Kind::too_deep)
    throw Error(ErrorCode::limit_exceeded,
                fmt::format("shard index nests deeper than {} levels, the max_json_depth limit",
                            limits.max_json_depth),
                {.source = where});
  if (problem.kind != JsonProblem::Kind::none)
    throw Error(ErrorCode::invalid_format,
                fmt::format("shard index is not JSON: {}", problem.detail),
                {.source = where, .offset = problem.offset});
  nlohmann::json index = parse_checked_json(text);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw Error(ErrorCode::invalid_format, "shard index has no 'weight_map' object",
                {.source = where});
  ShardIndex out;
  if (index.contains("metadata") && index["metadata"].is_object())
    out.metadata = index["metadata"].dump();
  std::map<std::string, size_t> shard_of_file;
  for (auto& [tensor, file] : index["weight_map"].items()) {
    if (!file.is_string())
      throw Error(ErrorCode::invalid_format, "weight_map value is not a file name",
                  {.source = where, .tensor = tensor});
    const std::string name = file.get<std::string>();
    auto [it, inserted] = shard_of_file.try_emplace(name, out.shards.size());
    if (inserted) out.shards.push_back(name);
    out.weight_map.emplace(tensor, it->second);
  }
  return out;
}

CheckpointFiles resolve_checkpoint_files(const fs::path& path, const Limits& limits) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec || !fs::exists(status))
    throw Error(ErrorCode::not_found, "no such file or folder", {.source = path.string()});
  if (fs::is_directory(status)) return resolve_folder(path, limits);
  if (ends_with(path.filename().string(), ".index.json")) return read_index(path, limits);
  CheckpointFiles files;
  files.shards.push_back(path);  // a named file is that file, a split shard included
  return files;
}

}  // namespace ballast
