// The fault-injecting Os (see faulty_os.hpp).
#include "support/faulty_os.hpp"

#include <algorithm>
#include <cerrno>

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

}  // namespace ballast::test
