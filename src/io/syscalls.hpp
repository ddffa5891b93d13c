// Every system call ballast makes on files goes through this table, so tests can inject short
// reads, EINTR and failures in one place. The default table calls the real functions.
#pragma once

#include <sys/types.h>

#include <cstddef>

struct stat;
struct statfs;

namespace ballast::sys {

struct Calls {
  int (*open)(const char* path, int flags, int mode);
  int (*close)(int fd);
  ssize_t (*pread)(int fd, void* buf, size_t count, off_t offset);
  int (*fstat)(int fd, struct stat* st);
  int (*fstatfs)(int fd, struct statfs* st);
  void* (*mmap)(void* addr, size_t length, int prot, int flags, int fd, off_t offset);
  int (*munmap)(void* addr, size_t length);
};

// The table in use. Swapping it is for tests only and is not thread-safe with running loads.
Calls& calls();
const Calls& real_calls();

// pread that retries EINTR and short reads until `count` bytes are read. Returns the bytes
// read (less than count only at end of file) or -1 with errno set.
ssize_t pread_full(int fd, void* buf, size_t count, off_t offset);

}  // namespace ballast::sys
