// Which mapping a load views a file through (see mapping_policy.hpp).
#include "loader/mapping_policy.hpp"

#include "io/file_source.hpp"
#include "loader/materialize.hpp"

namespace ballast {
namespace {

// A private writable mapping of the plan's byte source when it is a local file that the read
// mode would map; the shared mapping when it is other memory (a memory source's bytes).
std::shared_ptr<const MappedRegion> private_mapping(const LoadPlan& plan, ReadMode mode) {
  auto shared = mapping_for(plan, mode);
  if (!shared) return nullptr;
  const auto file = local_file_of(*plan.view.data, false);
  if (!file) return shared;
  return map_writable_copy(*file, plan.view.data->size());
}

}  // namespace

std::shared_ptr<const MappedRegion> MappingPolicy::mapping(const LoadPlan& plan) {
  switch (writes_) {
    case MappedWrites::refused: return mapping_for(plan, mode_);
    case MappedWrites::per_call: return private_mapping(plan, mode_);
    case MappedWrites::per_loader: break;
  }
  const ByteSource* key = plan.view.data.get();
  std::lock_guard lock(mutex_);
  auto it = kept_.find(key);
  if (it != kept_.end() && it->second.source.lock().get() == key) return it->second.region;
  // Entries of sources that are gone go as their addresses are reused.
  auto region = private_mapping(plan, mode_);
  kept_[key] = Kept{plan.view.data, region};
  return region;
}

}  // namespace ballast
