// Host memory for owned tensors: page-backed mappings that fill fast.
//
// Reading a page-cached file into fresh memory costs mostly page faults: one per 4 KiB page,
// each zeroing its page before the copy overwrites it. Owned host memory therefore comes from
// private anonymous mappings aligned to 2 MiB and advised to use transparent huge pages (one
// fault per 2 MiB). A large allocation gets a mapping of its own, returned to the kernel when
// its last user lets go; it ends at the allocation's last 4 KiB page, so only its whole 2 MiB
// extents are huge and nothing past the end is resident. Small allocations are carved out of 32 MiB
// slabs, one current slab per thread, so the hundreds of norms and biases of a checkpoint also land
// on huge pages; a slab is unmapped when the last allocation carved from it is released (the
// allocator keeps only a weak reference), so one long-lived small tensor can keep at most one slab
// alive. A batch load places its tensors in one arena instead (see batch_arena.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace ballast {

// A block of writable host memory, at least `size` bytes, aligned to `alignment`. Throws
// Error(limit_exceeded) when the kernel refuses the memory.
struct HostBlock {
  std::shared_ptr<void> owner;  // keeps the mapping (or slab) alive
  std::byte* data = nullptr;
};

// Allocations of at least this many bytes get a mapping of their own.
inline constexpr uint64_t kDedicatedMappingBytes = 4u << 20;
inline constexpr uint64_t kSlabBytes = 32u << 20;
inline constexpr uint64_t kHugePageBytes = 2u << 20;

// One private anonymous mapping whose start is 2 MiB aligned, advised to use huge pages. Its
// size is rounded to 4 KiB pages only: the whole 2 MiB extents get huge pages and a shorter
// tail gets small ones (faulted in at once), so a 5 MiB tensor is not zeroed and resident as
// 6 MiB. Throws Error(limit_exceeded) when the kernel refuses the mapping.
class HugePageMapping {
 public:
  explicit HugePageMapping(uint64_t size);
  ~HugePageMapping();
  HugePageMapping(const HugePageMapping&) = delete;
  HugePageMapping& operator=(const HugePageMapping&) = delete;

  std::byte* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  uint64_t size_;
  std::byte* data_ = nullptr;
};

HostBlock allocate_host_block(uint64_t size, size_t alignment);

}  // namespace ballast
