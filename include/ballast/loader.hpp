// WeightLoader: the contract an inference engine programs against, plus the registry of named
// loader implementations and the factory that builds them.
//
// Every operation has an asynchronous form (returning std::future; errors arrive as
// ballast::Error from future::get) and a blocking form. A WeightLoader is thread-safe: any
// number of threads may call it at once.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "ballast/config.hpp"
#include "ballast/metadata.hpp"
#include "ballast/source.hpp"
#include "ballast/spec.hpp"
#include "ballast/tensor.hpp"

namespace ballast {

class WeightLoader {
 public:
  virtual ~WeightLoader() = default;

  virtual std::future<TensorRef> load_tensor_async(TensorSpec spec) = 0;
  // Loads concurrently; the result is in the order of `specs`. The first failure is reported.
  virtual std::future<std::vector<TensorRef>> load_tensors_async(std::vector<TensorSpec> specs) = 0;
  virtual std::future<bool> is_available_async(WeightSource source) = 0;
  virtual std::future<WeightMetadata> get_metadata_async(WeightSource source) = 0;
  // Makes later loads of `source` cheap: opens, parses and (for remote sources) downloads it.
  virtual std::future<void> preload_async(WeightSource source) = 0;
  virtual WeightLoaderCapabilities capabilities() const = 0;

  TensorRef load_tensor(TensorSpec spec) { return load_tensor_async(std::move(spec)).get(); }
  std::vector<TensorRef> load_tensors(std::vector<TensorSpec> specs) {
    return load_tensors_async(std::move(specs)).get();
  }
  bool is_available(WeightSource source) { return is_available_async(std::move(source)).get(); }
  WeightMetadata get_metadata(WeightSource source) {
    return get_metadata_async(std::move(source)).get();
  }
  void preload(WeightSource source) { preload_async(std::move(source)).get(); }
};

using WeightLoaderMaker = std::function<std::unique_ptr<WeightLoader>(const WeightLoaderConfig&)>;

// Named loader implementations. "default" is always registered. Thread-safe.
void register_weight_loader(const std::string& name, WeightLoaderMaker maker);
std::vector<std::string> registered_weight_loaders();

// Builds the loader registered as `name`; throws Error(not_found) for an unknown name.
std::unique_ptr<WeightLoader> create_weight_loader(const WeightLoaderConfig& config = {},
                                                   const std::string& name = "default");

}  // namespace ballast
