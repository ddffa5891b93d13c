// Claims space in a caller's block for an arena TensorFactory (host or device memory): an
// atomic bump pointer, so concurrent allocations never overlap.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ballast {

// Returns the offset in [base, base + capacity) of nbytes aligned to `alignment` (a power of
// two), advancing `used`. Throws Error(invalid_argument) for a bad alignment and
// Error(limit_exceeded) when the block has no room left.
uint64_t claim_arena_space(std::atomic<uint64_t>& used, uintptr_t base, uint64_t capacity,
                           uint64_t nbytes, size_t alignment);

}  // namespace ballast
