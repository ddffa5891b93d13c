// Shard index parsing (see shard_index.hpp).
#include "loader/shard_index.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/error.hpp"
#include "util/bounded_json.hpp"
#include "util/error_text.hpp"
#include "util/op_count.hpp"

namespace ballast {

ShardIndex parse_shard_index(std::span<const std::byte> bytes, const std::string& where,
                             const Limits& limits) {
  // Bounded nesting: serializing "metadata" recurses once per level.
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const JsonProblem problem = check_json(text, limits.max_json_depth);
  if (problem.kind == JsonProblem::Kind::too_deep)
    throw Error(ErrorCode::limit_exceeded,
                limit_message("shard index nesting depth", std::nullopt, "max_json_depth",
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
    count_op();  // std::map lookups: O(log n) each (parser_scaling_test)
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

}  // namespace ballast
