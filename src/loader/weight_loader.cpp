// WeightLoader's fallbacks for loaders that do not provide their own: streaming after a whole
// load_tensors, and load_checkpoint_async as metadata, glob selection and one load_tensors.
// Neither keeps a reference to the loader past the call: the work they leave pending holds
// only the futures of the loader's own asynchronous calls.
#include "ballast/loader.hpp"
#include "loader/tensor_selection.hpp"

namespace ballast {

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
  std::future<std::vector<TensorRef>> all;
  try {
    all =
        load_tensors_async(selected_specs(get_metadata(source), source, patterns, transformations));
  } catch (...) {
    std::promise<std::map<std::string, TensorRef>> failed;
    failed.set_exception(std::current_exception());
    return failed.get_future();
  }
  return std::async(std::launch::async, [all = std::move(all)]() mutable {
    std::map<std::string, TensorRef> out;
    for (TensorRef& t : all.get()) out.emplace(t->name(), std::move(t));
    return out;
  });
}

}  // namespace ballast
