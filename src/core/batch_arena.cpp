// The batch arena (see batch_arena.hpp).
#include "core/batch_arena.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

#include "ballast/error.hpp"
#include "ballast/storage.hpp"

namespace ballast {

// The mapping, a bump pointer, and for every 2 MiB page the number of live tensors on it. One
// mutex orders allocations and releases: a page is given back only while no allocation covers
// it, so a tensor placed on a page being released never loses bytes it wrote.
class BatchArena::Pages {
 public:
  explicit Pages(uint64_t capacity)
      : mapping_(capacity), live_((mapping_.size() + kHugePageBytes - 1) / kHugePageBytes) {}

  // The offset of `nbytes` aligned to `alignment`, or nothing when they do not fit.
  std::optional<uint64_t> place(uint64_t nbytes, size_t alignment) {
    std::lock_guard lock(mutex_);
    const uint64_t at = (used_ + alignment - 1) / alignment * alignment;
    if (at > mapping_.size() || nbytes > mapping_.size() - at) return std::nullopt;
    used_ = at + nbytes;
    for_each_page(at, nbytes, [&](uint64_t page) { ++live_[page]; });
    return at;
  }

  void release(uint64_t at, uint64_t nbytes) {
    std::lock_guard lock(mutex_);
    uint64_t run_begin = 0, run_end = 0;  // pages [run_begin, run_end) are now unused
    auto give_back = [&] {
      if (run_end > run_begin) {
        const uint64_t begin = run_begin * kHugePageBytes;
        const uint64_t end = std::min(run_end * kHugePageBytes, mapping_.size());
        madvise(mapping_.data() + begin, end - begin, MADV_DONTNEED);
      }
    };
    for_each_page(at, nbytes, [&](uint64_t page) {
      if (--live_[page] != 0) return;
      if (page != run_end) {
        give_back();
        run_begin = page;
      }
      run_end = page + 1;
    });
    give_back();
  }

  std::byte* data() const { return mapping_.data(); }

 private:
  template <typename F>
  static void for_each_page(uint64_t at, uint64_t nbytes, F&& f) {
    if (nbytes == 0) return;
    for (uint64_t page = at / kHugePageBytes; page <= (at + nbytes - 1) / kHugePageBytes; ++page)
      f(page);
  }

  HugePageMapping mapping_;
  std::mutex mutex_;
  uint64_t used_ = 0;
  std::vector<uint32_t> live_;
};

namespace {

// An owned host tensor buffer inside an arena; it keeps the arena's pages alive.
class ArenaBuffer final : public Storage {
 public:
  ArenaBuffer(std::shared_ptr<BatchArena::Pages> pages, uint64_t at, uint64_t size)
      : pages_(std::move(pages)), at_(at), size_(size) {}
  ~ArenaBuffer() override { pages_->release(at_, size_); }
  ArenaBuffer(const ArenaBuffer&) = delete;
  ArenaBuffer& operator=(const ArenaBuffer&) = delete;

  StorageKind kind() const override { return StorageKind::host_buffer; }
  std::byte* data() const override { return pages_->data() + at_; }
  uint64_t size() const override { return size_; }

 private:
  std::shared_ptr<BatchArena::Pages> pages_;
  uint64_t at_;
  uint64_t size_;
};

}  // namespace

std::shared_ptr<BatchArena> BatchArena::reserve(uint64_t capacity) {
  try {
    return std::shared_ptr<BatchArena>(new BatchArena(std::make_shared<Pages>(capacity)));
  } catch (const Error&) {
    return nullptr;
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

std::shared_ptr<Storage> BatchArena::allocate(uint64_t nbytes, size_t alignment) {
  // make_host_buffer reports a bad alignment; one above a huge page is rare enough to leave to it.
  if (alignment < alignof(std::max_align_t) || (alignment & (alignment - 1)) != 0 ||
      alignment > kHugePageBytes)
    return make_host_buffer(nbytes, alignment);
  // Small tensors keep to the per-thread slabs: packed side by side here, tensors filled by
  // different threads at once would fault the same huge page, one zeroing it while the other
  // waits (the 3200-tensor benchmark case loaded 1.2x slower). A large tensor shares a huge
  // page only with its two neighbours, at its ends.
  if (nbytes < kArenaMinimumBytes) return make_host_buffer(nbytes, alignment);
  if (auto at = pages_->place(nbytes, alignment))
    return std::make_shared<ArenaBuffer>(pages_, *at, nbytes);
  return make_host_buffer(nbytes, alignment);
}

}  // namespace ballast
