// File primitives the download caches share (the Hub cache and ballast's URL/S3 object cache):
// descriptors closed on scope exit, flock-based locks, atomic small-file writes, and the one
// way a download becomes a cache file: streamed into `<name>.incomplete`, checked (length and,
// when known, sha256), synced and renamed into place, or deleted on any failure.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "remote/http_fetch.hpp"

namespace ballast {

// An open file descriptor closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd();
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Opens (creating) `path` and takes an flock on it: exclusive or shared, blocking unless
// `try_only`. Returns null when `try_only` and the lock is held elsewhere; throws Error(io) on
// failure.
std::unique_ptr<Fd> lock_file(const std::filesystem::path& path, bool exclusive,
                              bool try_only = false);

// A fresh name beside `path` (same folder, so a rename to `path` is atomic).
std::filesystem::path temporary_path_beside(const std::filesystem::path& path);

// Writes `text` to `path` through a temporary file and a rename.
void write_atomically(const std::filesystem::path& path, const std::string& text);

// Streams a download into `destination`: `fetch` pushes the bytes to the sink it is given;
// there must be exactly `size` of them and, when `sha256` is given (lowercase hex), they must
// hash to it, else Error(integrity). `source` names the object in errors. `progress`, when set,
// hears the bytes written so far after each piece. Returns the bytes' sha256 (lowercase hex),
// computed as they stream in whether or not one was expected.
std::string download_into(const std::filesystem::path& destination, uint64_t size,
                          const std::optional<std::string>& sha256, const std::string& source,
                          const std::function<void(const ByteSink&)>& fetch,
                          const std::function<void(uint64_t)>& progress = {});

}  // namespace ballast
