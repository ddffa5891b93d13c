// The fault-injecting Os (see faulty_os.hpp).
#include "support/faulty_os.hpp"

#include <algorithm>
#include <cerrno>
#include <string_view>

namespace ballast::test {

ssize_t FaultyOs::pread(int fd, void* buf, size_t count, off_t offset) const {
  ++pread_calls;
  if (fail_reads) {
    errno = EIO;
    return -1;
  }
  if (interrupt_reads && !interrupted_.exchange(true)) {
    errno = EINTR;
    return -1;
  }
  interrupted_ = false;
  if (max_read_bytes > 0) count = std::min(count, max_read_bytes);
  return target().pread(fd, buf, count, offset);
}

int FaultyOs::fstat(int fd, struct stat* st) const {
  ++fstat_calls;
  const int rc = target().fstat(fd, st);
  if (rc == 0 && S_ISREG(st->st_mode)) st->st_size = std::max<off_t>(0, st->st_size - shrink_by);
  return rc;
}

ssize_t FaultyOs::write(int fd, const void* buf, size_t count) const {
  ++write_calls;
  if (fail_writes_after >= 0) {
    const long long room = fail_writes_after - written_;
    if (room <= 0) {
      errno = write_error;
      return -1;
    }
    count = std::min(count, static_cast<size_t>(room));  // a short write up to the limit
  }
  const ssize_t n = target().write(fd, buf, count);
  if (n > 0) written_ += n;
  return n;
}

int FaultyOs::fsync(int fd) const {
  ++fsync_calls;
  if (fail_fsync) {
    errno = EIO;
    return -1;
  }
  return target().fsync(fd);
}

int FaultyOs::rename(const char* from, const char* to) const {
  ++rename_calls;
  if (!fail_renames_of.empty() && std::string_view(from).ends_with(fail_renames_of)) {
    errno = EIO;
    return -1;
  }
  return target().rename(from, to);
}

}  // namespace ballast::test
