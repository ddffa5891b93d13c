// The specs of a load_checkpoint call: every tensor of a checkpoint whose name matches one of
// the caller's glob patterns, each with the caller's transformations.
#pragma once

#include <string>
#include <vector>

#include "ballast/metadata.hpp"
#include "ballast/source.hpp"
#include "ballast/spec.hpp"

namespace ballast {

// The tensors of `meta` (read from `source`) matching one of `patterns` (fnmatch; every tensor
// when empty). Throws Error(not_found) when patterns are given and no tensor matches.
std::vector<TensorSpec> selected_specs(const WeightMetadata& meta, const WeightSource& source,
                                       const std::vector<std::string>& patterns,
                                       const std::vector<Transformation>& transformations);

}  // namespace ballast
