// Local file ByteSource (pread + lazy mmap + a lazy O_DIRECT descriptor). See file_source.hpp.
#include "io/file_source.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"

namespace ballast {
namespace {

// What a non-regular file is, for the error that refuses it.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "folder";
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  if (S_ISSOCK(mode)) return "socket";
  return "special file";
}

// Opens `name` again with extra `flags` (O_DIRECT) only while it is still the file that `fd`
// has open; O_NONBLOCK so that a FIFO put in its place cannot block the open. -1 otherwise.
int reopen_same_file(const Os& os, int fd, const std::string& name, int flags) {
  const int again = os.open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags, 0);
  if (again < 0) return -1;
  struct stat was {
  }, now{};
  if (os.fstat(fd, &was) == 0 && os.fstat(again, &now) == 0 && was.st_dev == now.st_dev &&
      was.st_ino == now.st_ino)
    return again;
  os.close(again);
  return -1;
}

// File systems on which a shared mapping is slow or may fault when the server changes the file.
bool is_remote_file_system(const Os& os, int fd) {
  struct statfs st {};
  if (os.fstatfs(fd, &st) != 0) return false;
  constexpr long kCifs = 0xFF534D42, kSmb2 = 0xFE534D42, kFuse = 0x65735546, kCeph = 0x00C36400,
                 kLustre = 0x0BD00BD0, kGpfs = 0x47504653, kNfs = NFS_SUPER_MAGIC;
  for (long magic : {kCifs, kSmb2, kFuse, kCeph, kLustre, kGpfs, kNfs})
    if (static_cast<long>(st.f_type) == magic) return true;
  return false;
}

// True when at least half of the mapped pages are in the page cache, judged from up to 256
// pages spread evenly over the mapping (a full mincore scan of a large file costs tens of ms).
bool mostly_resident(void* data, uint64_t size) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t pages = (size + page - 1) / page;
  const uint64_t samples = std::min<uint64_t>(pages, 256);
  uint64_t in_cache = 0;
  for (uint64_t i = 0; i < samples; ++i) {
    unsigned char resident = 0;
    auto* at = static_cast<std::byte*>(data) + (i * pages / samples) * page;
    if (::mincore(at, page, &resident) != 0) return true;  // unknown: keep the mapping
    in_cache += resident & 1;
  }
  return in_cache * 2 >= samples;
}

// A whole-file mapping, unmapped through the Os that mapped it; the region starts `skip`
// bytes in.
class MmapRegion final : public MappedRegion {
 public:
  MmapRegion(std::shared_ptr<const Os> os, void* data, uint64_t size, uint64_t skip = 0,
             bool writable = false)
      : os_(std::move(os)), data_(data), size_(size), skip_(skip), writable_(writable) {}
  ~MmapRegion() override {
    if (data_ != nullptr && size_ > 0) os_->munmap(data_, size_);
  }
  MmapRegion(const MmapRegion&) = delete;
  MmapRegion& operator=(const MmapRegion&) = delete;
  const std::byte* data() const override { return static_cast<const std::byte*>(data_) + skip_; }
  uint64_t size() const override { return size_ - skip_; }
  bool writable() const override { return writable_; }

 private:
  std::shared_ptr<const Os> os_;
  void* data_;
  uint64_t size_;
  uint64_t skip_;
  bool writable_;
};

class FileByteSource final : public ByteSource, public LocalFileBacked {
 public:
  FileByteSource(int fd, uint64_t size, std::string name, FileOpenOptions options)
      : fd_(fd), size_(size), name_(std::move(name)), options_(options) {}
  ~FileByteSource() override {
    os().close(fd_);
    if (direct_fd_ >= 0) os().close(direct_fd_);
  }
  FileByteSource(const FileByteSource&) = delete;
  FileByteSource& operator=(const FileByteSource&) = delete;

  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }

  void read_at(uint64_t offset, std::span<std::byte> out) const override {
    if (!range_inside(offset, out.size(), size_))
      throw Error(ErrorCode::invalid_format, past_end_message(out.size(), size_, "file"),
                  {.source = name_, .offset = offset});
    ssize_t n = pread_full(os(), fd_, out.data(), out.size(), static_cast<off_t>(offset));
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
    if (!options_.allow_mmap || size_ == 0) return nullptr;
    struct stat st {};
    if (os().fstat(fd_, &st) != 0 || static_cast<uint64_t>(st.st_size) < size_) return nullptr;
    std::call_once(map_once_, [this] {
      if (!options_.map_anywhere && is_remote_file_system(os(), fd_)) return;
      void* p = os().mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
      if (p == MAP_FAILED) return;  // fall back to pread
      auto region = std::make_shared<MmapRegion>(options_.os, p, size_);
      if (options_.map_anywhere || mostly_resident(p, size_)) region_ = std::move(region);
    });
    return region_;
  }

  std::optional<LocalFile> local_file(bool want_direct) const override {
    if (want_direct)
      std::call_once(direct_once_,
                     [this] { direct_fd_ = reopen_same_file(os(), fd_, name_, O_DIRECT); });
    return LocalFile{
        .fd = fd_, .direct_fd = direct_fd_, .base = 0, .file_size = size_, .os = options_.os};
  }

 private:
  const Os& os() const { return *options_.os; }

  int fd_;
  uint64_t size_;
  std::string name_;
  FileOpenOptions options_;
  mutable std::once_flag map_once_;
  mutable std::shared_ptr<const MappedRegion> region_;
  mutable std::once_flag direct_once_;
  mutable int direct_fd_ = -1;
};

}  // namespace

std::shared_ptr<const MappedRegion> map_local_file(const LocalFile& file) {
  if (file.file_size == 0 || file.base > file.file_size) return nullptr;
  void* p = file.os->mmap(nullptr, file.file_size, PROT_READ, MAP_PRIVATE, file.fd, 0);
  if (p == MAP_FAILED) return nullptr;
  return std::make_shared<MmapRegion>(file.os, p, file.file_size, file.base);
}

std::shared_ptr<const MappedRegion> map_writable_copy(const LocalFile& file, uint64_t length) {
  if (length == 0 || file.base > file.file_size || length > file.file_size - file.base)
    return nullptr;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t start = file.base / page * page;
  const uint64_t mapped = file.base - start + length;
  void* p = file.os->mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE, file.fd,
                          static_cast<off_t>(start));
  if (p == MAP_FAILED) return nullptr;
  return std::make_shared<MmapRegion>(file.os, p, mapped, file.base - start, true);
}

FileOpenOptions file_open_options(ReadMode mode, std::shared_ptr<const Os> os) {
  return {.allow_mmap = mode == ReadMode::automatic || mode == ReadMode::mmap,
          .map_anywhere = mode == ReadMode::mmap,
          .os = std::move(os)};
}

std::shared_ptr<ByteSource> open_file_source(const std::filesystem::path& path,
                                             FileOpenOptions options) {
  const std::string name = path.string();
  const Os& os = *options.os;
  int fd = os.open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0);
  if (fd < 0) {
    int err = errno;
    throw Error(err == ENOENT || err == ENOTDIR ? ErrorCode::not_found : ErrorCode::io,
                fmt::format("cannot open file: {}", std::strerror(err)), {.source = name});
  }
  struct stat st {};
  if (os.fstat(fd, &st) != 0) {
    int err = errno;
    os.close(fd);
    throw Error(ErrorCode::io, fmt::format("cannot stat file: {}", std::strerror(err)),
                {.source = name});
  }
  if (!S_ISREG(st.st_mode)) {
    os.close(fd);
    throw Error(ErrorCode::invalid_argument,
                fmt::format("not a regular file (a {})", file_kind(st.st_mode)), {.source = name});
  }
  return std::make_shared<FileByteSource>(fd, static_cast<uint64_t>(st.st_size), name, options);
}

std::vector<std::byte> read_small_file(const std::filesystem::path& path, uint64_t max_bytes,
                                       const std::string& name, std::shared_ptr<const Os> os) {
  auto file = open_file_source(path, {.allow_mmap = false, .os = std::move(os)});
  if (file->size() > max_bytes)
    throw Error(ErrorCode::limit_exceeded,
                limit_message("file size", file->size(), "max_header_bytes", max_bytes),
                {.source = name});
  return file->read(0, file->size());
}

std::optional<std::string> read_small_text_file(const std::filesystem::path& path,
                                                uint64_t max_bytes, std::shared_ptr<const Os> os) {
  std::vector<std::byte> bytes;
  try {
    bytes = read_small_file(path, max_bytes, path.string(), std::move(os));
  } catch (const Error& e) {
    if (e.code() == ErrorCode::not_found) return std::nullopt;
    throw;
  }
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace ballast
