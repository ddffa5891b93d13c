// The system-call table (see syscalls.hpp).
#include "io/syscalls.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>

namespace ballast::sys {
namespace {

int real_open(const char* path, int flags, int mode) { return ::open(path, flags, mode); }

const Calls kReal = {real_open, ::close, ::pread, ::fstat, ::fstatfs, ::mmap, ::munmap};
Calls g_calls = kReal;

}  // namespace

Calls& calls() { return g_calls; }
const Calls& real_calls() { return kReal; }

ssize_t pread_full(int fd, void* buf, size_t count, off_t offset) {
  size_t done = 0;
  auto* out = static_cast<char*>(buf);
  while (done < count) {
    ssize_t n = g_calls.pread(fd, out + done, count - done, offset + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

}  // namespace ballast::sys
