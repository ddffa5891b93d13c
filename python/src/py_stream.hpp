// ballast._core.TensorStream: the iterator behind Loader.iter_tensors. A thread runs the C++
// streaming load and queues each tensor as it completes; __next__ waits (without the GIL) for
// the next one. Dropping the iterator early stops the load: no further tensor is handed over.
#pragma once

#include <memory>
#include <vector>

#include <nanobind/nanobind.h>

#include "ballast/loader.hpp"

namespace ballast::python {

void bind_stream(nanobind::module_& m);

// Starts streaming `specs` through `loader`; `keep_alive` (the Python loader) outlives it.
nanobind::object start_stream(WeightLoader& loader, std::vector<TensorSpec> specs,
                              nanobind::object keep_alive);

}  // namespace ballast::python
