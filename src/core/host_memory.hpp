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
// alive.
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

HostBlock allocate_host_block(uint64_t size, size_t alignment);

}  // namespace ballast
