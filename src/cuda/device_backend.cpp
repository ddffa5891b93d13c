// Pinned-memory accounting shared by every DeviceBackend (see device_backend.hpp).
#include "cuda/device_backend.hpp"

namespace ballast {

std::byte* DeviceBackend::allocate_pinned(uint64_t nbytes) {
  std::byte* memory = allocate_pinned_memory(nbytes);
  const uint64_t now = pinned_.fetch_add(nbytes) + nbytes;
  uint64_t peak = peak_pinned_.load();
  while (now > peak && !peak_pinned_.compare_exchange_weak(peak, now)) {
  }
  return memory;
}

void DeviceBackend::free_pinned(std::byte* memory, uint64_t nbytes) noexcept {
  if (!memory) return;
  free_pinned_memory(memory);
  pinned_.fetch_sub(nbytes);
}

}  // namespace ballast
