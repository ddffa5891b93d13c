// The one check of a WeightLoaderConfig's values, made where a configuration enters
// (make_weight_loader, the default loader): each value outside its range (config.hpp) is
// Error(invalid_argument) naming the field, the value and the allowed range, before any thread
// is started or memory set aside.
#pragma once

#include "ballast/config.hpp"

namespace ballast {

// The worker threads a configuration asks for: num_threads, or one per core for 0.
unsigned worker_thread_count(const WeightLoaderConfig& config);

void check_weight_loader_config(const WeightLoaderConfig& config);

}  // namespace ballast
