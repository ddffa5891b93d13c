// Host memory for owned tensors (see host_memory.hpp).
#include "core/host_memory.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <string>

#include "ballast/error.hpp"

namespace ballast {
namespace {

constexpr uint64_t kHugePage = kHugePageBytes;

uint64_t round_up(uint64_t value, uint64_t step) { return (value + step - 1) / step * step; }

constexpr uint64_t kPage = 4096;

// Bump allocation out of the current slab; a slab lives as long as its allocations do. Each
// thread carves from a slab of its own: threads filling neighbouring buffers of one shared slab
// would fault the same huge page, one zeroing it while the other waits.
class SlabAllocator {
 public:
  HostBlock allocate(uint64_t size, size_t alignment) {
    auto slab = current_.lock();
    uint64_t at = slab ? round_up(used_, alignment) : 0;
    if (!slab || at + size > slab->size()) {
      slab = std::make_shared<HugePageMapping>(kSlabBytes);
      current_ = slab;
      at = 0;
    }
    used_ = at + size;
    return {slab, slab->data() + at};
  }

 private:
  std::weak_ptr<HugePageMapping> current_;
  uint64_t used_ = 0;
};

}  // namespace

HugePageMapping::HugePageMapping(uint64_t size)
    : size_(round_up(std::max<uint64_t>(size, 1), kPage)) {
  // Over-reserve by one huge page, then unmap the unaligned head and the spare tail.
  const uint64_t reserve = size_ + kHugePage;
  void* raw = mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    throw Error(ErrorCode::limit_exceeded,
                "cannot allocate " + std::to_string(size) + " bytes of host memory");
  auto* start = static_cast<std::byte*>(raw);
  const auto address = reinterpret_cast<uintptr_t>(start);
  data_ = start + (round_up(address, kHugePage) - address);
  if (data_ > start) munmap(start, static_cast<size_t>(data_ - start));
  std::byte* tail = data_ + size_;
  if (tail < start + reserve) munmap(tail, static_cast<size_t>(start + reserve - tail));
  madvise(data_, size_, MADV_HUGEPAGE);  // advisory: without THP the mapping still works
  // The small-page tail is faulted in one call, cheaper than a trap per page while filling.
  const uint64_t huge_part = size_ / kHugePage * kHugePage;
  if (huge_part < size_) madvise(data_ + huge_part, size_ - huge_part, MADV_POPULATE_WRITE);
}

HugePageMapping::~HugePageMapping() { munmap(data_, size_); }

HostBlock allocate_host_block(uint64_t size, size_t alignment) {
  if (size >= kDedicatedMappingBytes || alignment > kHugePage) {
    auto mapping = std::make_shared<HugePageMapping>(size);
    return {mapping, mapping->data()};
  }
  thread_local SlabAllocator slabs;
  return slabs.allocate(size, alignment);
}

}  // namespace ballast
