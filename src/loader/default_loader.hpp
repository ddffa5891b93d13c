// The default WeightLoader: resolves sources to Checkpoints (cached per source), plans each
// TensorSpec against its Index entry, checks the result's shape and dtype against the spec
// before reading, and materializes tensors on a bounded worker pool.
#pragma once

#include <memory>

#include "ballast/loader.hpp"

namespace ballast {

std::unique_ptr<WeightLoader> make_default_loader(const WeightLoaderConfig& config);

}  // namespace ballast
