// The real Os and the forwarding OsWrapper (see os.hpp).
#include "io/os.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "ballast/error.hpp"

namespace ballast {
namespace {

class RealOs final : public Os {
 public:
  int open(const char* path, int flags, mode_t mode) const override {
    return ::open(path, flags, mode);
  }
  int close(int fd) const override { return ::close(fd); }
  ssize_t pread(int fd, void* buf, size_t count, off_t offset) const override {
    return ::pread(fd, buf, count, offset);
  }
  int fstat(int fd, struct stat* st) const override { return ::fstat(fd, st); }
  int stat(const char* path, struct stat* st) const override { return ::stat(path, st); }
  int fstatfs(int fd, struct statfs* st) const override { return ::fstatfs(fd, st); }
  int fadvise(int fd, off_t offset, off_t length, int advice) const override {
    return ::posix_fadvise(fd, offset, length, advice);
  }
  void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) const override {
    return ::mmap(addr, length, prot, flags, fd, offset);
  }
  int munmap(void* addr, size_t length) const override { return ::munmap(addr, length); }
  ssize_t write(int fd, const void* buf, size_t count) const override {
    return ::write(fd, buf, count);
  }
  int fsync(int fd) const override { return ::fsync(fd); }
  int flock(int fd, int operation) const override { return ::flock(fd, operation); }
  int lstat(const char* path, struct stat* st) const override { return ::lstat(path, st); }
  int rename(const char* from, const char* to) const override { return ::rename(from, to); }
  int unlink(const char* path) const override { return ::unlink(path); }
  int mkdir(const char* path, mode_t mode) const override { return ::mkdir(path, mode); }
  int symlink(const char* target, const char* link_path) const override {
    return ::symlink(target, link_path);
  }
  int utimens(const char* path, const struct timespec* times) const override {
    return ::utimensat(AT_FDCWD, path, times, 0);
  }
  std::optional<std::filesystem::path> canonical(const std::filesystem::path& path) const override {
    std::error_code ec;
    auto resolved = std::filesystem::canonical(path, ec);
    if (ec) return std::nullopt;
    return resolved;
  }
  std::vector<FolderEntry> list_folder(const std::filesystem::path& folder) const override {
    std::error_code ec;
    std::vector<FolderEntry> entries;
    for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end;
         it.increment(ec)) {
      std::error_code type_ec;
      entries.push_back({it->path(), it->is_regular_file(type_ec)});
    }
    if (ec)
      throw Error(ec == std::errc::no_such_file_or_directory ? ErrorCode::not_found : ErrorCode::io,
                  fmt::format("cannot list the folder: {}", ec.message()),
                  {.source = folder.string()});
    return entries;
  }
  bool allows_io_uring() const override { return true; }
};

}  // namespace

const std::shared_ptr<const Os>& real_os() {
  static const std::shared_ptr<const Os> os = std::make_shared<RealOs>();
  return os;
}

int OsWrapper::open(const char* path, int flags, mode_t mode) const {
  return target_->open(path, flags, mode);
}
int OsWrapper::close(int fd) const { return target_->close(fd); }
ssize_t OsWrapper::pread(int fd, void* buf, size_t count, off_t offset) const {
  return target_->pread(fd, buf, count, offset);
}
int OsWrapper::fstat(int fd, struct stat* st) const { return target_->fstat(fd, st); }
int OsWrapper::stat(const char* path, struct stat* st) const { return target_->stat(path, st); }
int OsWrapper::fstatfs(int fd, struct statfs* st) const { return target_->fstatfs(fd, st); }
int OsWrapper::fadvise(int fd, off_t offset, off_t length, int advice) const {
  return target_->fadvise(fd, offset, length, advice);
}
void* OsWrapper::mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) const {
  return target_->mmap(addr, length, prot, flags, fd, offset);
}
int OsWrapper::munmap(void* addr, size_t length) const { return target_->munmap(addr, length); }
ssize_t OsWrapper::write(int fd, const void* buf, size_t count) const {
  return target_->write(fd, buf, count);
}
int OsWrapper::fsync(int fd) const { return target_->fsync(fd); }
int OsWrapper::flock(int fd, int operation) const { return target_->flock(fd, operation); }
int OsWrapper::lstat(const char* path, struct stat* st) const { return target_->lstat(path, st); }
int OsWrapper::rename(const char* from, const char* to) const { return target_->rename(from, to); }
int OsWrapper::unlink(const char* path) const { return target_->unlink(path); }
int OsWrapper::mkdir(const char* path, mode_t mode) const { return target_->mkdir(path, mode); }
int OsWrapper::symlink(const char* target, const char* link_path) const {
  return target_->symlink(target, link_path);
}
int OsWrapper::utimens(const char* path, const struct timespec* times) const {
  return target_->utimens(path, times);
}
std::optional<std::filesystem::path> OsWrapper::canonical(const std::filesystem::path& path) const {
  return target_->canonical(path);
}
std::vector<FolderEntry> OsWrapper::list_folder(const std::filesystem::path& folder) const {
  return target_->list_folder(folder);
}

ssize_t pread_full(const Os& os, int fd, void* buf, size_t count, off_t offset) {
  size_t done = 0;
  auto* out = static_cast<char*>(buf);
  while (done < count) {
    ssize_t n = os.pread(fd, out + done, count - done, offset + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

}  // namespace ballast
