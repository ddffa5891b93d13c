// Cache file primitives (see cache_files.hpp).
#include "remote/cache_files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

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

void write_all(int fd, std::span<const std::byte> bytes, const fs::path& path) {
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_io("cannot write", path);
    done += static_cast<size_t>(n);
  }
}

// A new file for writing: an existing file, or a symlink planted at `path`, is an error
// (O_EXCL | O_NOFOLLOW), never followed or truncated.
int create_new_file(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) fail_io("cannot create", path);
  return fd;
}

}  // namespace

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<Fd> lock_file(const fs::path& path, bool exclusive, bool try_only) {
  // O_NOFOLLOW: a symlink planted at the lock's name is an error, never a file elsewhere.
  auto fd = std::make_unique<Fd>(
      ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644));
  if (fd->get() < 0) fail_io("cannot open the lock", path);
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw Error(ErrorCode::io, "the lock is not a regular file", {.source = path.string()});
  const int operation = (exclusive ? LOCK_EX : LOCK_SH) | (try_only ? LOCK_NB : 0);
  while (::flock(fd->get(), operation) != 0) {
    if (try_only && errno == EWOULDBLOCK) return nullptr;
    if (errno != EINTR) fail_io("cannot lock", path);
  }
  return fd;
}

fs::path temporary_path_beside(const fs::path& path) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  return path.string() + fmt::format(".{}.{:x}.tmp", ::getpid(), random());
}

void write_atomically(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  const fs::path temp = temporary_path_beside(path);
  try {
    Fd out(create_new_file(temp));
    write_all(out.get(), std::as_bytes(std::span(text)), temp);
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  fs::rename(temp, path);
}

std::string download_into(const fs::path& destination, uint64_t size,
                          const std::optional<std::string>& sha256, const std::string& source,
                          const std::function<void(const ByteSink&)>& fetch,
                          const std::function<void(uint64_t)>& progress) {
  const fs::path incomplete = destination.string() + ".incomplete";
  std::error_code ec;
  std::string actual;
  try {
    // Under the object's exclusive lock: what is at this name is a leftover of a process that
    // died (or something planted), removed (unlink never follows a symlink) and made anew.
    ::unlink(incomplete.c_str());
    Fd out(create_new_file(incomplete));
    Sha256 hash;
    uint64_t written = 0;
    fetch([&](std::span<const std::byte> bytes) {
      if (written + bytes.size() > size)
        throw Error(ErrorCode::integrity, "the download is longer than its stated size",
                    {.source = source});
      write_all(out.get(), bytes, incomplete);
      hash.update(bytes);
      written += bytes.size();
      if (progress) progress(written);
    });
    if (written != size)
      throw Error(ErrorCode::integrity,
                  fmt::format("the download has {} bytes, the server said {}", written, size),
                  {.source = source});
    actual = hash.hex();
    if (sha256 && actual != *sha256)
      throw Error(ErrorCode::integrity, "the download's sha256 differs from the expected one",
                  {.source = source, .expected = *sha256, .actual = actual});
    if (::fsync(out.get()) != 0) fail_io("cannot sync", incomplete);
  } catch (...) {
    fs::remove(incomplete, ec);  // never leave a partial file behind
    throw;
  }
  fs::rename(incomplete, destination);
  return actual;
}

}  // namespace ballast
