// The tensor-parallel read plan of `ballast inspect --shard` (see shard_plan.hpp).
#include "shard_plan.hpp"

#include <iostream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/error.hpp"
#include "ballast/tensor_parallel.hpp"
#include "cli_common.hpp"

namespace ballast::cli {
namespace {

struct TensorReads {
  std::string name;
  std::string steps;  // "" when read whole
  uint64_t bytes = 0;
  size_t ranges = 0;
  std::string refused;  // the planner's message when the step does not fit
};

std::vector<TensorReads> plan_rank(const WeightMetadata& meta, int rank, const ShardOption& s) {
  std::vector<TensorReads> out;
  for (const auto& [name, info] : meta.tensors) {
    TensorReads t{.name = name};
    const auto dims = static_cast<int>(info.shape.size());
    std::vector<Transformation> steps;
    if (s.dim < dims && s.dim >= -dims) {
      steps.push_back(Shard{.rank = rank, .world = s.world, .dim = s.dim});
      t.steps = to_string(steps.front());
    }
    try {
      for (const ByteRange& r : planned_reads(info.dtype, info.shape, steps)) {
        t.bytes += r.nbytes;
        ++t.ranges;
      }
    } catch (const Error& e) {
      t.refused = e.message();
    }
    out.push_back(std::move(t));
  }
  return out;
}

int parse_int(const std::string& text, const std::string& whole) {
  size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size())
    throw Error(ErrorCode::invalid_argument,
                fmt::format("--shard '{}': expected RANK/WORLD[:DIM] (RANK may be all)", whole));
  return value;
}

}  // namespace

ShardOption parse_shard_option(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) parse_int("", text);  // throws the usage message
  const auto colon = text.find(':', slash);
  ShardOption s;
  const std::string rank = text.substr(0, slash);
  s.world = parse_int(text.substr(slash + 1, colon - slash - 1), text);
  if (colon != std::string::npos) s.dim = parse_int(text.substr(colon + 1), text);
  if (rank != "all") s.rank = parse_int(rank, text);
  if (s.world < 1 || (s.rank && (*s.rank < 0 || *s.rank >= s.world)))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("--shard '{}': RANK must be in 0..WORLD-1", text));
  return s;
}

void print_shard_plan(const std::string& source, const WeightMetadata& meta,
                      const ShardOption& shard, bool json) {
  std::vector<int> ranks;
  for (int r = shard.rank.value_or(0); r < (shard.rank ? *shard.rank + 1 : shard.world); ++r)
    ranks.push_back(r);
  nlohmann::json out = {{"source", source},
                        {"world", shard.world},
                        {"dim", shard.dim},
                        {"total_size_bytes", meta.total_size_bytes},
                        {"ranks", nlohmann::json::array()}};
  if (!json) fmt::print("{}  (world {}, dim {})\n", source, shard.world, shard.dim);
  for (int rank : ranks) {
    const auto tensors = plan_rank(meta, rank, shard);
    uint64_t bytes = 0;
    size_t ranges = 0;
    nlohmann::json listed = nlohmann::json::array();
    for (const auto& t : tensors) {
      bytes += t.bytes;
      ranges += t.ranges;
      nlohmann::json item = {{"name", t.name}, {"bytes_read", t.bytes}, {"ranges", t.ranges}};
      if (!t.steps.empty()) item["transform"] = t.steps;
      if (!t.refused.empty()) item["refused"] = t.refused;
      listed.push_back(std::move(item));
    }
    out["ranks"].push_back(
        {{"rank", rank}, {"bytes_read", bytes}, {"ranges", ranges}, {"tensors", listed}});
    if (json) continue;
    if (shard.rank) {
      fmt::print("\n{:<48}  {:<16}  {:>12}  {:>7}\n", "name", "transform", "reads", "ranges");
      for (const auto& t : tensors)
        fmt::print("{:<48}  {:<16}  {:>12}  {:>7}{}\n", t.name,
                   t.steps.empty() ? "(whole)" : t.steps, human_bytes(t.bytes), t.ranges,
                   t.refused.empty() ? "" : "  refused: " + t.refused);
    }
    const double share = meta.total_size_bytes ? 100.0 * static_cast<double>(bytes) /
                                                     static_cast<double>(meta.total_size_bytes)
                                               : 0.0;
    fmt::print("{}rank {} reads {} ({} bytes, {:.1f}% of {}) in {} ranges, plus the header\n",
               shard.rank ? "\n" : "", rank, human_bytes(bytes), bytes, share,
               human_bytes(meta.total_size_bytes), ranges);
  }
  if (json) std::cout << json_text(out) << "\n";
}

}  // namespace ballast::cli
