// File primitives the download caches share (the Hub cache and ballast's URL/S3 object cache):
// descriptors closed on scope exit, flock-based locks, atomic small-file writes, and the one
// way a download becomes a cache file: streamed into `<name>.incomplete` (continuing a partial
// one that an interrupted download left there, when the caller says it holds the same object),
// checked (length and, when known, sha256), synced and renamed into place. A download that
// fails on the network (or whose process dies) leaves its `.incomplete` file for the next one
// to resume, which continues it only when it is ballast's own file and its bytes are proven
// (ResumeProof); any other failure deletes it. Every file call goes through the Os it is given
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

// Whether an open file (its fstat) is one ballast may write into in a cache: a regular file of
// the current user with no other name (a hard link planted at a cache's name has two).
bool is_own_file(const struct stat& st);

// The bytes of the small file at `path` when it is one of ballast's own (is_own_file, opened
// without following a symlink and checked with fstat after the open) of at most `max_bytes`;
// nullopt otherwise.
std::optional<std::string> read_own_small_file(const std::shared_ptr<const Os>& os,
                                               const std::filesystem::path& path,
                                               uint64_t max_bytes);

// Starts the partial download of `destination` with `prefix` (the object's first bytes, read
// already) unless `destination` or a partial download of it exists: a later download_into with
// `resume` continues after them. Under the caller's exclusive lock on the object.
void begin_partial(const std::shared_ptr<const Os>& os, const std::filesystem::path& destination,
                   std::span<const std::byte> prefix);

// What a partial download's first bytes were when they were last recorded.
struct PartialCheckpoint {
  uint64_t length = 0;
  std::string sha256;  // of the first `length` bytes, lowercase hex
};

// How download_into may continue a partial download left at `<destination>.incomplete`. Only a
// file of ballast's own (is_own_file) is ever continued, and only when its bytes can be proven:
// - with `recorded` set (the object cache), by the checkpoint the caller keeps beside it: the
//   partial's first `length` bytes must hash to it (bytes after them are dropped), and `record`
//   hears a new checkpoint every kCheckpointBytes and when a network failure ends the download;
// - without (the Hub), by the `sha256` the whole must have: a continued download whose whole
//   hashes otherwise is discarded and downloaded again from zero.
struct ResumeProof {
  std::function<std::optional<PartialCheckpoint>()> recorded;
  std::function<void(const PartialCheckpoint&)> record;
};

// The bytes between two checkpoints of a download that records them.
constexpr uint64_t kCheckpointBytes = 8 << 20;

// Streams a download into `destination`, under the caller's exclusive lock on the object. With
// `resume`, a partial `.incomplete` file left by an interrupted download of the same object is
// continued after its proven bytes (see ResumeProof; `fetch` is asked for the bytes after them);
// anything else at that name is removed (never written through) and the download starts from
// zero. There must be exactly `size` bytes in all and, when `sha256` is given (lowercase hex),
// they must hash to it, else Error(integrity). `source` names the object in errors.
// `progress`, when set, hears the bytes in the file so far after each piece. A network error
// leaves the partial file for a later resume (when `resume` can prove it); any other error
// deletes it. Returns the bytes' sha256 (lowercase hex).
std::string download_into(const std::shared_ptr<const Os>& os,
                          const std::filesystem::path& destination, uint64_t size,
                          const std::optional<std::string>& sha256, const std::string& source,
                          const RangeFetch& fetch, const std::function<void(uint64_t)>& progress,
                          const ResumeProof* resume);

}  // namespace ballast
