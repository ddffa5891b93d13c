// Local checkpoint file discovery (see checkpoint_files.hpp).
#include "loader/checkpoint_files.hpp"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/error.hpp"
#include "formats/gguf/gguf_split.hpp"
#include "io/file_source.hpp"
#include "io/folder_opener.hpp"
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

// Files of one kind in a folder, sorted by name.
std::vector<fs::path> files_ending(const fs::path& folder,
                                   const std::vector<std::string_view>& suffixes) {
  std::vector<fs::path> out;
  for (const auto& item : fs::directory_iterator(folder)) {
    if (!item.is_regular_file()) continue;
    std::string name = item.path().filename().string();
    for (auto suffix : suffixes)
      if (ends_with(name, suffix)) {
        out.push_back(item.path());
        break;
      }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every shard of the GGUF split set that `shard` belongs to, in order (just `shard` when its
// name is not a split name). A folder is the whole model: a set with shards missing is an
// error naming them, never a smaller model.
std::vector<fs::path> gguf_split_set(const fs::path& shard) {
  const std::vector<std::string> siblings = gguf_split_siblings(shard.string());
  if (siblings.empty()) return {shard};
  std::vector<fs::path> set;
  std::vector<std::string> missing;
  std::error_code ec;
  for (const auto& name : siblings) {
    if (!fs::exists(name, ec)) missing.push_back(fs::path(name).filename().string());
    set.emplace_back(name);
  }
  if (!missing.empty())
    throw Error(ErrorCode::not_found,
                fmt::format("the GGUF split set is incomplete: {} of its {} shards are missing "
                            "({}{})",
                            missing.size(), siblings.size(), missing.front(),
                            missing.size() > 1 ? ", ..." : ""),
                {.source = shard.string()});
  return set;
}

// Several GGUF files in a folder are one model only when they are exactly one split set
// (NAME-00001-of-0000N.gguf ...); several ONNX files are never one model.
void require_one_model(const fs::path& folder, std::string_view kind,
                       const std::vector<fs::path>& found) {
  if (kind == "gguf" && gguf_split_set(found.front()) == found) return;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("folder holds {} {} files that are not one model; name the file",
                          found.size(), kind),
              {.source = folder.string()});
}

CheckpointFiles resolve_folder(const fs::path& folder, const Limits& limits) {
  // In order of preference; the first kind present wins (safetensors over .bin).
  const std::vector<std::pair<std::string_view, std::vector<std::string_view>>> kinds = {
      {"safetensors index", {".safetensors.index.json"}},
      {"safetensors", {".safetensors"}},
      {"pytorch index", {".bin.index.json", ".pt.index.json"}},
      {"pytorch", {".bin", ".pt", ".pth"}},
      {"gguf", {".gguf"}},
      {"onnx", {".onnx"}},
      {"numpy", {".npz", ".npy"}},
  };
  for (const auto& [kind, suffixes] : kinds) {
    auto found = files_ending(folder, suffixes);
    if (found.empty()) continue;
    if (ends_with(std::string(kind), "index")) {
      if (found.size() > 1)
        throw Error(ErrorCode::invalid_format,
                    fmt::format("folder holds {} shard indexes; name one", found.size()),
                    {.source = folder.string()});
      return read_index(found.front(), limits);
    }
    if (found.size() > 1 && (kind == "gguf" || kind == "onnx"))
      require_one_model(folder, kind, found);
    CheckpointFiles files;
    files.shards = kind == "gguf" ? gguf_split_set(found.front()) : std::move(found);
    return files;
  }
  throw Error(ErrorCode::not_found, "folder holds no weight files", {.source = folder.string()});
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
