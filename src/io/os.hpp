// Os: the operating system's file calls behind one object, as LevelDB's Env puts them. Every
// call ballast makes on local files (open, pread, stat, mmap, folder listings, path
// resolution, read-ahead advice, and the download caches' writes, syncs, renames, locks,
// folders and links) goes through the Os it was given: the loader hands its Os to its stores
// (remote/source_store.hpp), checkpoints and caches (RemoteContext::os), a store to the file
// sources it opens, a file source to the read engine (LocalFile::os). Tests pass an OsWrapper
// that injects short reads, EINTR, EIO, a truncation or a failing write, sync or rename, or
// counts calls, without touching any other loader. The network goes through libcurl and is not
// here. The seam is internal (docs/design.md).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct stat;
struct statfs;
struct timespec;

namespace ballast {

// One entry of a folder listing.
struct FolderEntry {
  std::filesystem::path path;
  bool regular_file = false;  // following symlinks
};

class Os {
 public:
  virtual ~Os() = default;

  // The system calls, with their usual results (-1 and errno on failure).
  virtual int open(const char* path, int flags, mode_t mode) const = 0;
  virtual int close(int fd) const = 0;
  virtual ssize_t pread(int fd, void* buf, size_t count, off_t offset) const = 0;
  virtual int fstat(int fd, struct stat* st) const = 0;
  virtual int stat(const char* path, struct stat* st) const = 0;
  virtual int fstatfs(int fd, struct statfs* st) const = 0;
  virtual int fadvise(int fd, off_t offset, off_t length, int advice) const = 0;
  virtual void* mmap(void* addr, size_t length, int prot, int flags, int fd,
                     off_t offset) const = 0;
  virtual int munmap(void* addr, size_t length) const = 0;
  virtual ssize_t write(int fd, const void* buf, size_t count) const = 0;
  virtual int fsync(int fd) const = 0;
  virtual int flock(int fd, int operation) const = 0;
  virtual int lstat(const char* path, struct stat* st) const = 0;
  virtual int rename(const char* from, const char* to) const = 0;
  virtual int unlink(const char* path) const = 0;
  virtual int mkdir(const char* path, mode_t mode) const = 0;
  virtual int symlink(const char* target, const char* link_path) const = 0;
  // utimensat(AT_FDCWD, path, times, 0): null times set both to now.
  virtual int utimens(const char* path, const struct timespec* times) const = 0;
  // The path with every symlink, `.` and `..` resolved, or nullopt when it does not exist.
  virtual std::optional<std::filesystem::path> canonical(
      const std::filesystem::path& path) const = 0;
  // The entries of `folder`; throws Error(io) (not_found when it is missing).
  virtual std::vector<FolderEntry> list_folder(const std::filesystem::path& folder) const = 0;
  // Whether reads may be handed to the kernel's io_uring ring, which makes no pread through
  // this object: only the real Os says yes, so a wrapper's faults reach every read.
  virtual bool allows_io_uring() const = 0;
};

// The real calls. Immutable; shared by every loader that is given no other Os.
const std::shared_ptr<const Os>& real_os();

// Forwards every call to another Os; a test derives from it and overrides what it changes.
class OsWrapper : public Os {
 public:
  explicit OsWrapper(std::shared_ptr<const Os> target) : target_(std::move(target)) {}

  int open(const char* path, int flags, mode_t mode) const override;
  int close(int fd) const override;
  ssize_t pread(int fd, void* buf, size_t count, off_t offset) const override;
  int fstat(int fd, struct stat* st) const override;
  int stat(const char* path, struct stat* st) const override;
  int fstatfs(int fd, struct statfs* st) const override;
  int fadvise(int fd, off_t offset, off_t length, int advice) const override;
  void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) const override;
  int munmap(void* addr, size_t length) const override;
  ssize_t write(int fd, const void* buf, size_t count) const override;
  int fsync(int fd) const override;
  int flock(int fd, int operation) const override;
  int lstat(const char* path, struct stat* st) const override;
  int rename(const char* from, const char* to) const override;
  int unlink(const char* path) const override;
  int mkdir(const char* path, mode_t mode) const override;
  int symlink(const char* target, const char* link_path) const override;
  int utimens(const char* path, const struct timespec* times) const override;
  std::optional<std::filesystem::path> canonical(const std::filesystem::path& path) const override;
  std::vector<FolderEntry> list_folder(const std::filesystem::path& folder) const override;
  bool allows_io_uring() const override { return false; }

  const Os& target() const { return *target_; }

 private:
  std::shared_ptr<const Os> target_;
};

// pread through `os` that retries EINTR and short reads until `count` bytes are read. Returns
// the bytes read (less than count only at end of file) or -1 with errno set.
ssize_t pread_full(const Os& os, int fd, void* buf, size_t count, off_t offset);

}  // namespace ballast
