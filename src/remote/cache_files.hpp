// File primitives the download caches share (the Hub cache and ballast's URL/S3 object cache):
// descriptors closed on scope exit, flock-based locks, atomic small-file writes, and the one
// way a download becomes a cache file: streamed into `<name>.incomplete` (continuing a partial
// one that an interrupted download left there, when the caller says it holds the same object),
// checked (length and, when known, sha256), synced and renamed into place. A download that
// fails on the network (or whose process dies) leaves its `.incomplete` file for the next one
// to resume; any other failure deletes it. Every file call goes through the Os it is given
// (the loader's: RemoteContext::os).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "io/os.hpp"
#include "remote/http_fetch.hpp"

namespace ballast {

// An open file descriptor closed (through its Os) on scope exit.
class Fd {
 public:
  Fd(std::shared_ptr<const Os> os, int fd) : os_(std::move(os)), fd_(fd) {}
  ~Fd();
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  std::shared_ptr<const Os> os_;
  int fd_;
};

// Creates `folder` and its missing parents; throws Error(io) on failure.
void make_folders(const Os& os, const std::filesystem::path& folder);

// Removes the file (or symlink) at `path`; false when there was none or it stays.
bool remove_file(const Os& os, const std::filesystem::path& path);

// Renames `from` to `to` (atomic, replacing `to`); throws Error(io) on failure.
void rename_file(const Os& os, const std::filesystem::path& from, const std::filesystem::path& to);

// stat (or, with `follow` false, lstat) of `path`; nullopt when it fails.
std::optional<struct stat> file_status(const Os& os, const std::filesystem::path& path,
                                       bool follow = true);

// Opens (creating) `path` and takes an flock on it: exclusive or shared, blocking unless
// `try_only`. Returns null when `try_only` and the lock is held elsewhere; throws Error(io) on
// failure.
std::unique_ptr<Fd> lock_file(const std::shared_ptr<const Os>& os,
                              const std::filesystem::path& path, bool exclusive,
                              bool try_only = false);

// A fresh name beside `path` (same folder, so a rename to `path` is atomic).
std::filesystem::path temporary_path_beside(const std::filesystem::path& path);

// Writes `text` to `path` through a temporary file and a rename.
void write_atomically(const std::shared_ptr<const Os>& os, const std::filesystem::path& path,
                      const std::string& text);

// Streams the object's bytes from offset `from` to its end into the sink it is given.
using RangeFetch = std::function<void(uint64_t from, const ByteSink&)>;

// `<destination>.incomplete`: where a download lands until it is complete.
std::filesystem::path incomplete_path(const std::filesystem::path& destination);

// Starts the partial download of `destination` with `prefix` (the object's first bytes, read
// already) unless `destination` or a partial download of it exists: a later download_into with
// `resume` continues after them. Under the caller's exclusive lock on the object.
void begin_partial(const std::shared_ptr<const Os>& os, const std::filesystem::path& destination,
                   std::span<const std::byte> prefix);

// Streams a download into `destination`, under the caller's exclusive lock on the object. With
// `resume`, a partial `.incomplete` file left by an interrupted download of the same object is
// hashed and continued (`fetch` is asked for the bytes after it); otherwise, or when it is not
// a regular file no longer than `size`, it is replaced. There must be exactly `size` bytes in
// all and, when `sha256` is given (lowercase hex), they must hash to it, else Error(integrity).
// `source` names the object in errors. `progress`, when set, hears the bytes in the file so
// far after each piece. A network error leaves the partial file for a later resume; any other
// error deletes it. Returns the bytes' sha256 (lowercase hex).
std::string download_into(const std::shared_ptr<const Os>& os,
                          const std::filesystem::path& destination, uint64_t size,
                          const std::optional<std::string>& sha256, const std::string& source,
                          const RangeFetch& fetch, const std::function<void(uint64_t)>& progress,
                          bool resume);

}  // namespace ballast
