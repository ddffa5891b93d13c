// BatchReader: keeps several positional reads in flight on one thread — through the thread's
// io_uring ring (liburing) when the build has it and the kernel allows it, and otherwise by
// running each read with pread as it is submitted. Callers submit, then collect completions in
// any order; they handle short reads themselves (resubmitting the rest). The pread fallback
// goes through the Os given; an Os that is not the real one is always read with pread.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <deque>

namespace ballast {

class Os;
struct UringRing;  // one thread's io_uring ring

class BatchReader {
 public:
  // At most this many reads may be in flight at once.
  static constexpr unsigned kMaxDepth = 32;

  // `use_uring` false (or an `os` that allows no io_uring) always reads with os.pread. `os`
  // must outlive the reader.
  BatchReader(const Os& os, bool use_uring);
  BatchReader(const BatchReader&) = delete;
  BatchReader& operator=(const BatchReader&) = delete;
  ~BatchReader();

  bool uses_uring() const { return ring_ != nullptr; }
  unsigned in_flight() const { return in_flight_; }

  // Starts reading `length` bytes at `offset` of `fd` into `buffer`; at most kMaxDepth at once.
  void submit(uint64_t tag, int fd, void* buffer, size_t length, uint64_t offset);

  struct Done {
    uint64_t tag;
    ssize_t result;  // bytes read (0 at end of file) or -errno
  };
  // Waits for one submitted read to finish.
  Done wait();

 private:
  const Os& os_;
  UringRing* ring_ = nullptr;  // the thread's ring, or null for pread
  unsigned in_flight_ = 0;
  std::deque<Done> finished_;  // pread results, in submission order
};

// True when this build and kernel can use io_uring (tries to create a ring once per thread).
bool io_uring_available();

}  // namespace ballast
