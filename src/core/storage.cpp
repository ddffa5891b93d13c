// Host storages: aligned owned buffers and borrowed caller memory.
#include "ballast/storage.hpp"

#include "ballast/error.hpp"
#include "core/host_memory.hpp"

namespace ballast {
namespace {

// Owned host memory: a mapping of its own or a slice of a shared slab (see host_memory.hpp).
class HostBuffer final : public Storage {
 public:
  HostBuffer(uint64_t size, size_t alignment)
      : block_(allocate_host_block(size, alignment)), size_(size) {}

  StorageKind kind() const override { return StorageKind::host_buffer; }
  std::byte* data() const override { return block_.data; }
  uint64_t size() const override { return size_; }

 private:
  HostBlock block_;
  uint64_t size_;
};

class BorrowedMemory final : public Storage {
 public:
  BorrowedMemory(std::byte* data, uint64_t size, std::function<void()> release)
      : data_(data), size_(size), release_(std::move(release)) {}
  ~BorrowedMemory() override {
    if (release_) release_();
  }
  BorrowedMemory(const BorrowedMemory&) = delete;
  BorrowedMemory& operator=(const BorrowedMemory&) = delete;

  StorageKind kind() const override { return StorageKind::caller_memory; }
  std::byte* data() const override { return data_; }
  uint64_t size() const override { return size_; }

 private:
  std::byte* data_;
  uint64_t size_;
  std::function<void()> release_;
};

}  // namespace

std::shared_ptr<Storage> make_host_buffer(uint64_t size, size_t alignment) {
  if (alignment < alignof(std::max_align_t) || (alignment & (alignment - 1)) != 0)
    throw Error(
        ErrorCode::invalid_argument,
        "alignment must be a power of two of at least 16, got " + std::to_string(alignment));
  return std::make_shared<HostBuffer>(size, alignment);
}

std::shared_ptr<Storage> make_borrowed_storage(std::byte* data, uint64_t size,
                                               std::function<void()> release) {
  return std::make_shared<BorrowedMemory>(data, size, std::move(release));
}

}  // namespace ballast
