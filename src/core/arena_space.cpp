// The arena's bump pointer (see arena_space.hpp).
#include "core/arena_space.hpp"

#include <fmt/format.h>

#include "ballast/error.hpp"

namespace ballast {

uint64_t claim_arena_space(std::atomic<uint64_t>& used_bytes, uintptr_t base, uint64_t capacity,
                           uint64_t nbytes, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("alignment {} is not a power of two", alignment));
  uint64_t used = used_bytes.load(std::memory_order_relaxed);
  uint64_t at = 0;
  do {
    // base + used stays inside the block, so neither sum can wrap.
    at = ((base + used + alignment - 1) & ~(uintptr_t{alignment} - 1)) - base;
    if (at > capacity || nbytes > capacity - at)
      throw Error(ErrorCode::limit_exceeded,
                  fmt::format("the arena has {} of its {} bytes left: {} bytes aligned to {} "
                              "do not fit",
                              capacity - used, capacity, nbytes, alignment));
  } while (!used_bytes.compare_exchange_weak(used, at + nbytes, std::memory_order_relaxed));
  return at;
}

}  // namespace ballast
