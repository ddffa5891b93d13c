// FaultyOs: the real file system calls with faults injected, for tests that hand it to a loader
// (make_default_loader_with_os) or a file source (FileOpenOptions::os). It can cut every pread
// short, fail the first pread of each read with EINTR, fail preads with EIO, report a file
// smaller than it is (a truncation seen by fstat), fail writes once a number of bytes is
// written (a full disk), fail fsync, fail the renames of files with a given suffix (a cache's
// `.incomplete` downloads), and counts the calls it makes. Settings may change between loads,
// not during one.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <memory>
#include <string>

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
  // Writes fail with `write_error` once this many bytes were written in all (-1: never).
  long long fail_writes_after = -1;
  int write_error = ENOSPC;
  // Every fsync fails with EIO.
  bool fail_fsync = false;
  // Renames of a path ending with this (when not empty) fail with EIO.
  std::string fail_renames_of;

  mutable std::atomic<int> pread_calls{0};
  mutable std::atomic<int> fstat_calls{0};
  mutable std::atomic<int> write_calls{0};
  mutable std::atomic<int> fsync_calls{0};
  mutable std::atomic<int> rename_calls{0};

  ssize_t pread(int fd, void* buf, size_t count, off_t offset) const override;
  int fstat(int fd, struct stat* st) const override;
  ssize_t write(int fd, const void* buf, size_t count) const override;
  int fsync(int fd) const override;
  int rename(const char* from, const char* to) const override;

 private:
  mutable std::atomic<bool> interrupted_{false};
  mutable std::atomic<long long> written_{0};
};

}  // namespace ballast::test
