// One mapping for the owned host tensors of a batch load.
//
// Allocating each tensor of a checkpoint on its own costs a mapping per tensor, and a tensor
// whose size is not a multiple of 2 MiB ends in small pages, each faulted, zeroed and put on
// the LRU lists one by one. A batch that knows its tensors' sizes up front reserves one
// huge-page mapping for all of its large ones instead and places them one after another in it,
// so nearly every byte lands on a huge page (on the benchmark checkpoint: 0.95x dd instead of
// 0.87x). Tensors stay independent: when one is released, every 2 MiB page that no live
// tensor of the arena touches any more goes back to the kernel at once (MADV_DONTNEED), and
// the mapping itself goes when the last tensor does.
#pragma once

#include <cstdint>
#include <memory>

#include "ballast/tensor.hpp"
#include "core/host_memory.hpp"

namespace ballast {

// Allocations that would get a mapping of their own are placed in the arena; smaller ones
// get ordinary host buffers (per-thread slabs).
inline constexpr uint64_t kArenaMinimumBytes = kDedicatedMappingBytes;

// A host TensorFactory serving large allocations from one reservation; a small one, or one
// that does not fit in what is left, gets an ordinary host buffer. Thread-safe.
class BatchArena final : public TensorFactory {
 public:
  // Reserves `capacity` bytes of address space (nothing is resident until written). Returns
  // null when the kernel refuses the mapping; callers then allocate tensor by tensor.
  static std::shared_ptr<BatchArena> reserve(uint64_t capacity);

  Device device() const override { return Device::cpu(); }
  std::shared_ptr<Storage> allocate(uint64_t nbytes, size_t alignment) override;

  class Pages;  // the mapping and its per-page counts of live tensors

 private:
  explicit BatchArena(std::shared_ptr<Pages> pages) : pages_(std::move(pages)) {}
  std::shared_ptr<Pages> pages_;
};

}  // namespace ballast
