// FaultyOs: the real file system calls with faults injected, for tests that hand it to a loader
// (make_default_loader_with_os) or a file source (FileOpenOptions::os). It can cut every pread
// short, fail the first pread of each read with EINTR, fail preads with EIO, report a file
// smaller than it is (a truncation seen by fstat), and counts the calls it makes. Settings may
// change between loads, not during one.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <memory>

#include "io/os.hpp"

namespace ballast::test {

class FaultyOs final : public OsWrapper {
 public:
  FaultyOs() : OsWrapper(real_os()) {}

  // At most this many bytes per pread (0: no limit): short reads.
  size_t max_read_bytes = 0;
  // Every other pread fails with EINTR before it reads.
  bool interrupt_reads = false;
  // Every pread fails with EIO.
  bool fail_reads = false;
  // fstat reports regular files this many bytes shorter than they are (a truncation).
  off_t shrink_by = 0;

  mutable std::atomic<int> pread_calls{0};
  mutable std::atomic<int> fstat_calls{0};

  ssize_t pread(int fd, void* buf, size_t count, off_t offset) const override;
  int fstat(int fd, struct stat* st) const override;

 private:
  mutable std::atomic<bool> interrupted_{false};
};

}  // namespace ballast::test
