// Storage: the memory that holds a tensor's bytes, and who owns it.
//
// A Storage is one of: a region of a memory-mapped file (zero-copy, kept mapped while any
// tensor uses it), an aligned host buffer that ballast allocated, memory the caller lent, or
// a device buffer made by a TensorFactory. Tensors share their Storage through shared_ptr, so
// a view can never outlive the bytes it points to. The loader writes a Storage only while it
// fills it, before any tensor that uses it is published; after that the loader only reads it,
// and the caller may write it when writable() says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "ballast/device.hpp"

namespace ballast {

enum class StorageKind : uint8_t { mapped_file, host_buffer, caller_memory, device_buffer };

class Storage {
 public:
  virtual ~Storage() = default;
  virtual StorageKind kind() const = 0;
  virtual Device device() const { return Device::cpu(); }
  // Start of the bytes (a device pointer for device storage).
  virtual std::byte* data() const = 0;
  virtual uint64_t size() const = 0;
  // Whether the caller may write the bytes in place: always, except a read-only mapping of a
  // file (WeightLoaderConfig::mapped_writes makes mappings private and writable).
  virtual bool writable() const { return kind() != StorageKind::mapped_file; }
};

// An owned host buffer aligned to `alignment` bytes (a power of two, at least 64 is typical).
std::shared_ptr<Storage> make_host_buffer(uint64_t size, size_t alignment);

// Memory the caller provides; `release` (may be empty) runs when the last tensor lets go.
std::shared_ptr<Storage> make_borrowed_storage(std::byte* data, uint64_t size,
                                               std::function<void()> release = {});

}  // namespace ballast
