// Cache file primitives (see cache_files.hpp).
#include "remote/cache_files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "remote/sha256.hpp"

namespace ballast {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail_io(std::string_view what, const fs::path& path) {
  throw Error(ErrorCode::io, fmt::format("{}: {}", what, std::strerror(errno)),
              {.source = path.string()});
}

void write_all(const Os& os, int fd, std::span<const std::byte> bytes, const fs::path& path) {
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = os.write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_io("cannot write", path);
    done += static_cast<size_t>(n);
  }
}

// A new file for writing: an existing file, or a symlink planted at `path`, is an error
// (O_EXCL | O_NOFOLLOW), never followed or truncated.
std::unique_ptr<Fd> create_new_file(const std::shared_ptr<const Os>& os, const fs::path& path) {
  const int fd = os->open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) fail_io("cannot create", path);
  return std::make_unique<Fd>(os, fd);
}

// The partial download at `path`, opened to be continued: a regular file (never a symlink) of
// at most `size` bytes, whose bytes go into `hash` and whose length into `length`. Null when
// there is none or it cannot be read (`hash` may then hold some of its bytes: the caller starts
// a new download).
std::unique_ptr<Fd> open_partial(const std::shared_ptr<const Os>& os, const fs::path& path,
                                 uint64_t size, Sha256& hash, uint64_t& length) {
  auto fd = std::make_unique<Fd>(
      os, os->open(path.c_str(), O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0));
  struct stat st {};
  if (fd->get() < 0 || os->fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) > size)
    return nullptr;
  const uint64_t total = static_cast<uint64_t>(st.st_size);
  std::vector<std::byte> buffer(std::min<uint64_t>(total, 4 << 20));
  for (length = 0; length < total;) {
    const ssize_t n =
        os->pread(fd->get(), buffer.data(), std::min<uint64_t>(buffer.size(), total - length),
                  static_cast<off_t>(length));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return nullptr;
    hash.update(std::span(buffer.data(), static_cast<size_t>(n)));
    length += static_cast<uint64_t>(n);
  }
  return fd;
}

}  // namespace

Fd::~Fd() {
  if (fd_ >= 0) os_->close(fd_);
}

void make_folders(const Os& os, const fs::path& folder) {
  if (folder.empty()) return;
  struct stat st {};
  if (os.stat(folder.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return;
  if (folder.has_relative_path() && folder.parent_path() != folder)
    make_folders(os, folder.parent_path());
  if (os.mkdir(folder.c_str(), 0755) != 0 &&
      (errno != EEXIST || os.stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)))
    fail_io("cannot create the folder", folder);
}

bool remove_file(const Os& os, const fs::path& path) { return os.unlink(path.c_str()) == 0; }

void rename_file(const Os& os, const fs::path& from, const fs::path& to) {
  if (os.rename(from.c_str(), to.c_str()) != 0)
    throw Error(ErrorCode::io,
                fmt::format("cannot rename to {}: {}", to.string(), std::strerror(errno)),
                {.source = from.string()});
}

std::optional<struct stat> file_status(const Os& os, const fs::path& path, bool follow) {
  struct stat st {};
  if ((follow ? os.stat(path.c_str(), &st) : os.lstat(path.c_str(), &st)) != 0) return std::nullopt;
  return st;
}

std::unique_ptr<Fd> lock_file(const std::shared_ptr<const Os>& os, const fs::path& path,
                              bool exclusive, bool try_only) {
  // O_NOFOLLOW: a symlink planted at the lock's name is an error, never a file elsewhere.
  auto fd = std::make_unique<Fd>(
      os, os->open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644));
  if (fd->get() < 0) fail_io("cannot open the lock", path);
  struct stat st {};
  if (os->fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw Error(ErrorCode::io, "the lock is not a regular file", {.source = path.string()});
  const int operation = (exclusive ? LOCK_EX : LOCK_SH) | (try_only ? LOCK_NB : 0);
  while (os->flock(fd->get(), operation) != 0) {
    if (try_only && errno == EWOULDBLOCK) return nullptr;
    if (errno != EINTR) fail_io("cannot lock", path);
  }
  return fd;
}

fs::path temporary_path_beside(const fs::path& path) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  return path.string() + fmt::format(".{}.{:x}.tmp", ::getpid(), random());
}

void write_atomically(const std::shared_ptr<const Os>& os, const fs::path& path,
                      const std::string& text) {
  make_folders(*os, path.parent_path());
  const fs::path temp = temporary_path_beside(path);
  try {
    auto out = create_new_file(os, temp);
    write_all(*os, out->get(), std::as_bytes(std::span(text)), temp);
    out.reset();
    rename_file(*os, temp, path);
  } catch (...) {
    os->unlink(temp.c_str());
    throw;
  }
}

fs::path incomplete_path(const fs::path& destination) {
  return destination.string() + ".incomplete";
}

void begin_partial(const std::shared_ptr<const Os>& os, const fs::path& destination,
                   std::span<const std::byte> prefix) {
  const fs::path incomplete = incomplete_path(destination);
  struct stat st {};
  if (prefix.empty() || os->stat(destination.c_str(), &st) == 0 ||
      os->lstat(incomplete.c_str(), &st) == 0 || errno != ENOENT)
    return;
  try {
    auto out = create_new_file(os, incomplete);
    write_all(*os, out->get(), prefix, incomplete);
  } catch (...) {
    os->unlink(incomplete.c_str());
    throw;
  }
}

std::string download_into(const std::shared_ptr<const Os>& os, const fs::path& destination,
                          uint64_t size, const std::optional<std::string>& sha256,
                          const std::string& source, const RangeFetch& fetch,
                          const std::function<void(uint64_t)>& progress, bool resume) {
  const fs::path incomplete = incomplete_path(destination);
  std::string actual;
  uint64_t written = 0;
  try {
    // Under the object's exclusive lock: what is at this name is a partial download left by a
    // process that failed or died (continued when `resume` says it is of this object), or
    // something planted (unlink never follows a symlink), removed and made anew.
    auto hash = std::make_unique<Sha256>();
    std::unique_ptr<Fd> partial =
        resume ? open_partial(os, incomplete, size, *hash, written) : nullptr;
    if (!partial || written == 0) {
      hash = std::make_unique<Sha256>();
      written = 0;
      os->unlink(incomplete.c_str());
      partial = create_new_file(os, incomplete);
    }
    const Fd& out = *partial;
    if (progress && written > 0) progress(written);
    fetch(written, [&](std::span<const std::byte> bytes) {
      if (written + bytes.size() > size)
        throw Error(ErrorCode::integrity, "the download is longer than its stated size",
                    {.source = source});
      write_all(*os, out.get(), bytes, incomplete);
      hash->update(bytes);
      written += bytes.size();
      if (progress) progress(written);
    });
    if (written != size)
      throw Error(ErrorCode::integrity,
                  fmt::format("the download has {} bytes, the server said {}", written, size),
                  {.source = source});
    actual = hash->hex();
    if (sha256 && actual != *sha256)
      throw Error(ErrorCode::integrity, "the download's sha256 differs from the expected one",
                  {.source = source, .expected = *sha256, .actual = actual});
    if (os->fsync(out.get()) != 0) fail_io("cannot sync", incomplete);
    partial.reset();
    rename_file(*os, incomplete, destination);
  } catch (const Error& e) {
    // A network failure leaves what arrived for the next download of this object to resume;
    // anything else (wrong bytes, a changed object, a full disk, a failed sync or rename)
    // leaves no partial file.
    if (!resume || written == 0 || e.code() != ErrorCode::network) os->unlink(incomplete.c_str());
    throw;
  } catch (...) {
    os->unlink(incomplete.c_str());
    throw;
  }
  return actual;
}

}  // namespace ballast
