// Host storages: aligned owned buffers and borrowed caller memory.
#include "ballast/storage.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include "ballast/error.hpp"

namespace ballast {
namespace {

constexpr size_t kHugePage = 2u << 20;
constexpr uint64_t kHugeThreshold = 4u << 20;

class HostBuffer final : public Storage {
 public:
  HostBuffer(uint64_t size, size_t alignment) : size_(size) {
    // Large buffers are aligned to 2 MiB and asked to use transparent huge pages: filling a
    // fresh buffer then takes one page fault per 2 MiB instead of one per 4 KiB, which is
    // most of the cost of reading a page-cached file into new memory.
    const bool huge = size >= kHugeThreshold;
    if (huge) alignment = std::max(alignment, kHugePage);
    // aligned_alloc needs a size that is a multiple of the alignment (and nonzero).
    uint64_t rounded = (size + alignment - 1) / alignment * alignment;
    if (rounded == 0) rounded = alignment;
    data_ = static_cast<std::byte*>(std::aligned_alloc(alignment, rounded));
    if (data_ == nullptr)
      throw Error(ErrorCode::limit_exceeded,
                  "cannot allocate " + std::to_string(size) + " bytes of host memory");
    if (huge) madvise(data_, rounded, MADV_HUGEPAGE);  // advisory: failure changes nothing
  }
  ~HostBuffer() override { std::free(data_); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  StorageKind kind() const override { return StorageKind::host_buffer; }
  std::byte* data() const override { return data_; }
  uint64_t size() const override { return size_; }

 private:
  std::byte* data_ = nullptr;
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

std::shared_ptr<Storage> borrow_memory(std::byte* data, uint64_t size,
                                       std::function<void()> release) {
  return std::make_shared<BorrowedMemory>(data, size, std::move(release));
}

}  // namespace ballast
