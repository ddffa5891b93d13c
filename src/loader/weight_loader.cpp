// WeightLoader's shared operations: the non-streaming fallback of load_tensors_streaming_async
// and load_checkpoint_async (metadata, glob selection, one streaming load).
#include <fnmatch.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ballast/error.hpp"
#include "ballast/loader.hpp"

namespace ballast {
namespace {

bool matches_any(const std::string& name, const std::vector<std::string>& patterns) {
  if (patterns.empty()) return true;
  for (const auto& p : patterns)
    if (name == p || fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

}  // namespace

std::future<void> WeightLoader::load_tensors_streaming_async(std::vector<TensorSpec> specs,
                                                             TensorCallback on_tensor) {
  auto all = load_tensors_async(std::move(specs));
  return std::async(std::launch::async,
                    [all = std::move(all), on_tensor = std::move(on_tensor)]() mutable {
                      for (const TensorRef& t : all.get()) on_tensor(t->name(), t);
                    });
}

std::future<std::map<std::string, TensorRef>> WeightLoader::load_checkpoint_async(
    WeightSource source, std::vector<std::string> patterns,
    std::vector<Transformation> transformations) {
  return std::async(
      std::launch::async, [this, source = std::move(source), patterns = std::move(patterns),
                           steps = std::move(transformations)] {
        std::vector<TensorSpec> specs;
        for (const auto& [name, info] : get_metadata(source).tensors)
          if (matches_any(name, patterns))
            specs.push_back({.name = name, .source = source, .transformations = steps});
        if (specs.empty() && !patterns.empty())
          throw Error(ErrorCode::not_found,
                      fmt::format("no tensor matches {}", fmt::join(patterns, ", ")),
                      {.source = describe(source)});
        std::map<std::string, TensorRef> out;
        load_tensors_streaming(std::move(specs), [&out](const std::string& name, TensorRef t) {
          out[name] = std::move(t);
        });
        return out;
      });
}

}  // namespace ballast
