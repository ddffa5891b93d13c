// The default WeightLoader: resolves sources to Checkpoints (cached per source), plans each
// TensorSpec against its Index entry, checks the result's shape and dtype against the spec
// before reading, and materializes tensors on a bounded worker pool. Every call it makes on
// local files goes through one Os (io/os.hpp): the real one, or a test's.
#pragma once

#include <memory>

#include "ballast/loader.hpp"
#include "io/os.hpp"

namespace ballast {

std::unique_ptr<WeightLoader> make_default_loader(const WeightLoaderConfig& config);

// The same loader on `os` instead of the real system calls (the internal seam that fault
// tests inject through; make_weight_loader always uses the real Os).
std::unique_ptr<WeightLoader> make_default_loader_with_os(const WeightLoaderConfig& config,
                                                          std::shared_ptr<const Os> os);

}  // namespace ballast
