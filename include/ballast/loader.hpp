// WeightLoader: the contract an inference engine programs against, plus the registry of named
// loader implementations and the factory that builds them.
//
// Every operation has an asynchronous form (returning std::future; errors arrive as
// ballast::Error from future::get) and a blocking form. A WeightLoader is thread-safe: any
// number of threads may call it at once.
//
// Pending work and the loader's lifetime: a loader may be destroyed while asynchronous calls
// are in flight. Its destructor waits for every one of them (loads, streaming callbacks
// included) to finish, and their futures stay valid after it. A callback must not destroy the
// loader that calls it.
#pragma once

#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ballast/config.hpp"
#include "ballast/metadata.hpp"
#include "ballast/source.hpp"
#include "ballast/spec.hpp"
#include "ballast/tensor.hpp"

namespace ballast {

// Receives each tensor of a streaming load as it completes, in completion order, one call at a
// time (no locking needed). `name` is the tensor's name. The default loader calls it on a
// delivery thread of the load's own, never on one of its loader threads, which hand tensors
// over without waiting for it: so the callback may make blocking loads through the same loader
// (nested loads, e.g. a weight's scales when the weight arrives), and tensors that complete
// while it runs queue for it. To stop the load early, throw (Error(ErrorCode::cancelled) by
// convention): the load ends with that exception, and no further call is made.
using TensorCallback = std::function<void(const std::string& name, TensorRef tensor)>;

class WeightLoader {
 public:
  virtual ~WeightLoader() = default;

  virtual std::future<TensorRef> load_tensor_async(TensorSpec spec) = 0;
  // Loads concurrently; the result is in the order of `specs`. The first failure is reported.
  virtual std::future<std::vector<TensorRef>> load_tensors_async(std::vector<TensorSpec> specs) = 0;
  // Loads concurrently and hands each tensor to `on_tensor` as soon as it is ready, so that a
  // caller can use the first tensors while the rest are in flight, and drop each after use.
  // The future is ready after the last call, once the load's work is over. The first failure
  // (of a load or of on_tensor) is reported; after it no further call is made, whatever the
  // thread count. The default implementation (for loaders that do not stream) calls on_tensor
  // in spec order once all tensors are loaded.
  virtual std::future<void> load_tensors_streaming_async(std::vector<TensorSpec> specs,
                                                         TensorCallback on_tensor);
  virtual std::future<bool> is_available_async(WeightSource source) = 0;
  virtual std::future<WeightMetadata> get_metadata_async(WeightSource source) = 0;
  // Makes later loads of `source` cheap: opens, parses and (for remote sources) downloads it.
  virtual std::future<void> preload_async(WeightSource source) = 0;
  virtual WeightLoaderCapabilities capabilities() const = 0;

  // Loads every tensor of `source` whose name matches one of the glob `patterns` (fnmatch;
  // every tensor when empty), each with `transformations`, in one call. Throws
  // Error(not_found) when patterns are given and no tensor matches. The default implementation
  // (for loaders that do not provide one) reads the metadata on the calling thread, then loads
  // through load_tensors_async.
  virtual std::future<std::map<std::string, TensorRef>> load_checkpoint_async(
      WeightSource source, std::vector<std::string> patterns = {},
      std::vector<Transformation> transformations = {});

  // The blocking forms wait for the asynchronous ones; load_tensor may be overridden to do
  // cheap work (a zero-copy view) on the calling thread instead of handing it to another.
  virtual TensorRef load_tensor(TensorSpec spec) {
    return load_tensor_async(std::move(spec)).get();
  }
  std::vector<TensorRef> load_tensors(std::vector<TensorSpec> specs) {
    return load_tensors_async(std::move(specs)).get();
  }
  void load_tensors_streaming(std::vector<TensorSpec> specs, TensorCallback on_tensor) {
    load_tensors_streaming_async(std::move(specs), std::move(on_tensor)).get();
  }
  std::map<std::string, TensorRef> load_checkpoint(
      WeightSource source, std::vector<std::string> patterns = {},
      std::vector<Transformation> transformations = {}) {
    return load_checkpoint_async(std::move(source), std::move(patterns), std::move(transformations))
        .get();
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
std::unique_ptr<WeightLoader> make_weight_loader(const WeightLoaderConfig& config = {},
                                                 const std::string& name = "default");

}  // namespace ballast
