// Cache file primitives (see cache_files.hpp).
#include "remote/cache_files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

// Reads `length` bytes of `fd` from its start in pieces of at most 4 MiB, handing each to
// `piece`; false when the file ends or a read fails first.
bool read_pieces(const Os& os, int fd, uint64_t length,
                 const std::function<void(std::span<const std::byte>)>& piece) {
  std::vector<std::byte> buffer(std::min<uint64_t>(length, 4 << 20));
  for (uint64_t done = 0; done < length;) {
    const ssize_t n = os.pread(fd, buffer.data(), std::min<uint64_t>(buffer.size(), length - done),
                               static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    piece(std::span(buffer.data(), static_cast<size_t>(n)));
    done += static_cast<uint64_t>(n);
  }
  return true;
}

// The partial download at `path`, opened to be continued after its proven bytes: one of
// ballast's own files (never a symlink or a hard link), of at most `size` bytes, whose first
// `checkpoint->length` bytes hash to `checkpoint->sha256` (without a checkpoint: all its bytes,
// proven later by the whole's sha256). The proven bytes go into `hash` and their count into
// `length`; bytes after them are dropped (the proven prefix is copied to a new file put in its
// place). Null when there is none or it cannot be proven (the caller starts a new download).
std::unique_ptr<Fd> open_partial(const std::shared_ptr<const Os>& os, const fs::path& path,
                                 uint64_t size, const std::optional<PartialCheckpoint>& checkpoint,
                                 Sha256& hash, uint64_t& length) {
  auto fd = std::make_unique<Fd>(
      os, os->open(path.c_str(), O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0));
  struct stat st {};
  if (fd->get() < 0 || os->fstat(fd->get(), &st) != 0 || !is_own_file(st) ||
      static_cast<uint64_t>(st.st_size) > size)
    return nullptr;
  const uint64_t total = static_cast<uint64_t>(st.st_size);
  length = checkpoint ? checkpoint->length : total;
  if (length > total) return nullptr;
  std::unique_ptr<Fd> copy;  // the proven prefix alone, when bytes follow it
  const fs::path copy_path = temporary_path_beside(path);
  if (length < total) copy = create_new_file(os, copy_path);
  try {
    const bool read = read_pieces(*os, fd->get(), length, [&](std::span<const std::byte> piece) {
      hash.update(piece);
      if (copy) write_all(*os, copy->get(), piece, copy_path);
    });
    if (!read || (checkpoint && hash.hex_so_far() != checkpoint->sha256)) {
      if (copy) os->unlink(copy_path.c_str());
      return nullptr;
    }
    if (!copy) return fd;
    rename_file(*os, copy_path, path);
  } catch (...) {
    if (copy) os->unlink(copy_path.c_str());
    throw;
  }
  return copy;
}

// One try of download_into: continuing the proven partial download when `resume` is given.
// nullopt when the continued download's whole failed its sha256: the partial is gone and the
// caller downloads again from zero.
std::optional<std::string> download_once(const std::shared_ptr<const Os>& os,
                                         const fs::path& destination, uint64_t size,
                                         const std::optional<std::string>& sha256,
                                         const std::string& source, const RangeFetch& fetch,
                                         const std::function<void(uint64_t)>& progress,
                                         const ResumeProof* resume, bool keep_on_network_error) {
  const fs::path incomplete = incomplete_path(destination);
  std::string actual;
  uint64_t written = 0;
  auto hash = std::make_unique<Sha256>();
  bool continued = false;
  // A checkpoint of the bytes written so far, for a later download to continue after them.
  auto record = [&] {
    if (resume && resume->record) resume->record({written, hash->hex_so_far()});
  };
  try {
    // Under the object's exclusive lock: what is at this name is a partial download left by a
    // process that failed or died (continued when its bytes are proven), or something planted
    // (unlink never follows a symlink, and removes a hard link's name only), removed and made
    // anew.
    std::unique_ptr<Fd> partial;
    if (resume) {
      std::optional<PartialCheckpoint> checkpoint;
      if (resume->recorded) checkpoint = resume->recorded();
      if (!resume->recorded || checkpoint)  // a checkpoint kept, or the whole's sha256
        partial = open_partial(os, incomplete, size, checkpoint, *hash, written);
    }
    continued = partial && written > 0;
    if (!continued) {
      hash = std::make_unique<Sha256>();
      written = 0;
      partial.reset();
      os->unlink(incomplete.c_str());
      partial = create_new_file(os, incomplete);
    }
    const Fd& out = *partial;
    if (progress && written > 0) progress(written);
    uint64_t next_checkpoint = written + kCheckpointBytes;
    fetch(written, [&](std::span<const std::byte> bytes) {
      if (written + bytes.size() > size)
        throw Error(ErrorCode::integrity, "the download is longer than its stated size",
                    {.source = source});
      write_all(*os, out.get(), bytes, incomplete);
      hash->update(bytes);
      written += bytes.size();
      if (written >= next_checkpoint) {
        record();
        next_checkpoint = written + kCheckpointBytes;
      }
      if (progress) progress(written);
    });
    if (written != size)
      throw Error(ErrorCode::integrity,
                  fmt::format("the download has {} bytes, the server said {}", written, size),
                  {.source = source});
    actual = hash->hex();
    if (sha256 && actual != *sha256) {
      if (continued) {  // the partial's bytes were not the file's: start again from zero
        partial.reset();
        os->unlink(incomplete.c_str());
        return std::nullopt;
      }
      throw Error(ErrorCode::integrity, "the download's sha256 differs from the expected one",
                  {.source = source, .expected = *sha256, .actual = actual});
    }
    if (os->fsync(out.get()) != 0) fail_io("cannot sync", incomplete);
    partial.reset();
    rename_file(*os, incomplete, destination);
  } catch (const Error& e) {
    // A network failure leaves what arrived (and its checkpoint) for the next download of this
    // object to continue; anything else (wrong bytes, a changed object, a full disk, a failed
    // sync or rename) leaves no partial file.
    if (keep_on_network_error && written > 0 && e.code() == ErrorCode::network) {
      try {
        record();
      } catch (const Error&) {
        // The checkpoint kept before stands: a later download continues after its bytes.
      }
    } else {
      os->unlink(incomplete.c_str());
    }
    throw;
  } catch (...) {
    os->unlink(incomplete.c_str());
    throw;
  }
  return actual;
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
  // O_NOFOLLOW: a symlink planted at the lock's name is an error, never a file elsewhere; and a
  // lock is only read (flock needs no write access), so a hard link planted there is never
  // written either.
  auto fd = std::make_unique<Fd>(
      os, os->open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644));
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

bool is_own_file(const struct stat& st) {
  return S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_uid == ::geteuid();
}

std::optional<std::string> read_own_small_file(const std::shared_ptr<const Os>& os,
                                               const fs::path& path, uint64_t max_bytes) {
  Fd fd(os, os->open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0));
  struct stat st {};
  if (fd.get() < 0 || os->fstat(fd.get(), &st) != 0 || !is_own_file(st) ||
      static_cast<uint64_t>(st.st_size) > max_bytes)
    return std::nullopt;
  std::string text;
  const bool read = read_pieces(
      *os, fd.get(), static_cast<uint64_t>(st.st_size), [&](std::span<const std::byte> piece) {
        text.append(reinterpret_cast<const char*>(piece.data()), piece.size());
      });
  if (!read) return std::nullopt;
  return text;
}

std::string download_into(const std::shared_ptr<const Os>& os, const fs::path& destination,
                          uint64_t size, const std::optional<std::string>& sha256,
                          const std::string& source, const RangeFetch& fetch,
                          const std::function<void(uint64_t)>& progress,
                          const ResumeProof* resume) {
  // A partial download is continued only when its bytes can be proven.
  const ResumeProof* proof = resume && (resume->recorded || sha256) ? resume : nullptr;
  const bool keep_on_network_error = proof != nullptr;
  if (auto actual = download_once(os, destination, size, sha256, source, fetch, progress, proof,
                                  keep_on_network_error))
    return *actual;
  return *download_once(os, destination, size, sha256, source, fetch, progress, nullptr,
                        keep_on_network_error);
}

}  // namespace ballast
