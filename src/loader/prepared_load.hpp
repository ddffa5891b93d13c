// PreparedLoad: one TensorSpec resolved to its plan before any tensor byte is read, as the
// loader hands it to the batch planner; and naming_errors, which names a load's tensor and
// source in any Error its body throws.
#pragma once

#include <memory>
#include <string>

#include "ballast/error.hpp"
#include "ballast/source.hpp"
#include "ballast/tensor.hpp"
#include "transform/plan.hpp"

namespace ballast {

// Points into its spec, which outlives it.
struct PreparedLoad {
  const WeightSource* source = nullptr;  // described only in errors
  std::string name;
  LoadPlan plan;
  Device device;
  TensorFactory* device_factory = nullptr;
  std::shared_ptr<const MappedRegion> mapping;  // MappingPolicy::mapping(plan)
  std::shared_ptr<ByteSource> shard;            // the bytes of the shard holding the tensor
};

template <typename F>
auto naming_errors(const PreparedLoad& p, F&& body) {
  try {
    return body();
  } catch (Error& e) {
    e.with_tensor(p.name);
    e.with_source(describe(*p.source));
    throw;
  }
}

}  // namespace ballast
