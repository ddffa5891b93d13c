// load_checkpoint's glob selection (see tensor_selection.hpp).
#include "loader/tensor_selection.hpp"

#include <fnmatch.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ballast/error.hpp"
#include "util/closest_names.hpp"

namespace ballast {
namespace {

bool matches_any(const std::string& name, const std::vector<std::string>& patterns) {
  if (patterns.empty()) return true;
  for (const auto& p : patterns)
    if (name == p || fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

}  // namespace

std::vector<TensorSpec> selected_specs(const WeightMetadata& meta, const WeightSource& source,
                                       const std::vector<std::string>& patterns,
                                       const std::vector<Transformation>& transformations) {
  std::vector<TensorSpec> specs;
  for (const auto& [name, info] : meta.tensors)
    if (matches_any(name, patterns))
      specs.push_back({.name = name, .source = source, .transformations = transformations});
  if (specs.empty() && !patterns.empty()) {
    // A tensor error (its context names the patterns), so Python raises a KeyError kind, not
    // a FileNotFoundError of a file that exists.
    std::vector<std::string_view> names;
    for (const auto& [name, info] : meta.tensors) names.push_back(name);
    const std::string wanted = fmt::format("{}", fmt::join(patterns, ", "));
    throw Error(ErrorCode::not_found,
                "no tensor matches " + wanted + closest_names_text(patterns.front(), names),
                {.source = describe(source), .tensor = wanted});
  }
  return specs;
}

}  // namespace ballast
