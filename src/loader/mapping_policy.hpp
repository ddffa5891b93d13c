// MappingPolicy: the mapping a load call views (or copies) a tensor's bytes through, by the
// loader's read mode and WeightLoaderConfig::mapped_writes: the byte source's shared read-only
// mapping, or a private copy-on-write mapping of the file made for the call or kept for the
// loader's life. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>

#include "ballast/config.hpp"
#include "transform/plan.hpp"

namespace ballast {

class MappingPolicy {
 public:
  MappingPolicy(ReadMode mode, MappedWrites writes) : mode_(mode), writes_(writes) {}

  // The mapping for `plan` in one load call (null: read into owned buffers). Each call makes
  // a new private mapping under MappedWrites::per_call, so a batch asks once per byte source.
  std::shared_ptr<const MappedRegion> mapping(const LoadPlan& plan);

 private:
  struct Kept {
    std::weak_ptr<const ByteSource> source;  // the key's source, to detect a reused address
    std::shared_ptr<const MappedRegion> region;
  };

  ReadMode mode_;
  MappedWrites writes_;
  std::mutex mutex_;
  std::unordered_map<const ByteSource*, Kept> kept_;  // per_loader: the mapping per source
};

}  // namespace ballast
