// Local file ByteSource (pread + lazy mmap). See file_source.hpp.
#include "io/file_source.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/syscalls.hpp"
#include "util/checked.hpp"

namespace ballast {
namespace {

// File systems on which a shared mapping is slow or may fault when the server changes the file.
bool is_remote_file_system(int fd) {
  struct statfs st {};
  if (sys::calls().fstatfs(fd, &st) != 0) return false;
  constexpr long kCifs = 0xFF534D42, kSmb2 = 0xFE534D42, kFuse = 0x65735546, kCeph = 0x00C36400,
                 kLustre = 0x0BD00BD0, kGpfs = 0x47504653, kNfs = NFS_SUPER_MAGIC;
  for (long magic : {kCifs, kSmb2, kFuse, kCeph, kLustre, kGpfs, kNfs})
    if (static_cast<long>(st.f_type) == magic) return true;
  return false;
}

class MmapRegion final : public MappedRegion {
 public:
  MmapRegion(void* data, uint64_t size) : data_(data), size_(size) {}
  ~MmapRegion() override {
    if (data_ != nullptr && size_ > 0) sys::calls().munmap(data_, size_);
  }
  MmapRegion(const MmapRegion&) = delete;
  MmapRegion& operator=(const MmapRegion&) = delete;
  const std::byte* data() const override { return static_cast<const std::byte*>(data_); }
  uint64_t size() const override { return size_; }

 private:
  void* data_;
  uint64_t size_;
};

class FileByteSource final : public ByteSource {
 public:
  FileByteSource(int fd, uint64_t size, std::string name, bool allow_mmap)
      : fd_(fd), size_(size), name_(std::move(name)), allow_mmap_(allow_mmap) {}
  ~FileByteSource() override { sys::calls().close(fd_); }
  FileByteSource(const FileByteSource&) = delete;
  FileByteSource& operator=(const FileByteSource&) = delete;

  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }

  void read_at(uint64_t offset, std::span<std::byte> out) const override {
    if (!range_inside(offset, out.size(), size_))
      throw Error(
          ErrorCode::invalid_format,
          fmt::format("read of {} bytes past the end of the {}-byte file", out.size(), size_),
          {.source = name_, .offset = offset});
    ssize_t n = sys::pread_full(fd_, out.data(), out.size(), static_cast<off_t>(offset));
    if (n < 0)
      throw Error(ErrorCode::io, fmt::format("read failed: {}", std::strerror(errno)),
                  {.source = name_, .offset = offset});
    if (static_cast<size_t>(n) != out.size())
      throw Error(ErrorCode::io,
                  fmt::format("file shrank while reading: got {} of {} bytes", n, out.size()),
                  {.source = name_, .offset = offset});
  }

  // Re-checks the size on every call: a file truncated since it was opened is never mapped
  // and never hands out new views (the caller falls back to pread, which reports the
  // truncation as Error(io)). Views handed out before the truncation can still fault.
  std::shared_ptr<const MappedRegion> mapping() const override {
    if (!allow_mmap_ || size_ == 0) return nullptr;
    struct stat st {};
    if (sys::calls().fstat(fd_, &st) != 0 || static_cast<uint64_t>(st.st_size) < size_)
      return nullptr;
    std::call_once(map_once_, [this] {
      if (is_remote_file_system(fd_)) return;
      void* p = sys::calls().mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
      if (p == MAP_FAILED) return;  // fall back to pread
      region_ = std::make_shared<MmapRegion>(p, size_);
    });
    return region_;
  }

 private:
  int fd_;
  uint64_t size_;
  std::string name_;
  bool allow_mmap_;
  mutable std::once_flag map_once_;
  mutable std::shared_ptr<const MappedRegion> region_;
};

}  // namespace

std::shared_ptr<ByteSource> open_file_source(const std::filesystem::path& path,
                                             FileOpenOptions options) {
  const std::string name = path.string();
  int fd = sys::calls().open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) {
    int err = errno;
    throw Error(err == ENOENT || err == ENOTDIR ? ErrorCode::not_found : ErrorCode::io,
                fmt::format("cannot open file: {}", std::strerror(err)), {.source = name});
  }
  struct stat st {};
  if (sys::calls().fstat(fd, &st) != 0) {
    int err = errno;
    sys::calls().close(fd);
    throw Error(ErrorCode::io, fmt::format("cannot stat file: {}", std::strerror(err)),
                {.source = name});
  }
  if (!S_ISREG(st.st_mode)) {
    sys::calls().close(fd);
    throw Error(ErrorCode::invalid_argument, "not a regular file", {.source = name});
  }
  return std::make_shared<FileByteSource>(fd, static_cast<uint64_t>(st.st_size), name,
                                          options.allow_mmap);
}

}  // namespace ballast
