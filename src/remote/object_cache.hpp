// ObjectCache: ballast's own download cache for URL and S3 objects (the Hub has its own, in
// huggingface_hub's layout). One flat folder, `<cache_dir>/objects/`, three files per object,
// named by the sha256 of the object's key (its full URL, or s3://bucket/key at an endpoint):
//
//   <hash>.blob             the bytes, complete and checked
//   <hash>.json             {"source", "etag", "size", "sha256", "blob_mtime_ns"}: the object the
//                           blob holds; its mtime is the last use
//   <hash>.lock             flock: exclusive while downloading or evicting, shared while a
//                           loader uses the blob
//   <hash>.blob.incomplete  a download in progress, or one interrupted (network failure, killed
//                           process), never read as data
//   <hash>.incomplete.json  {"source", "etag", "last_modified", "size", "length", "sha256"}:
//                           the version of the object the .incomplete file holds the start of,
//                           and its checkpoint: how many of its first bytes are proven, and their
//                           sha256 (kept every few MiB and when a network failure ends it)
//
// A cached blob is used when the object's current size and ETag (from a HEAD) match the record.
// An interrupted download is resumed after the bytes its checkpoint proves when both files are
// ballast's own (is_own_file: never a planted hard link or another user's file) and the object
// still has the version the partial file was started from (the same size and a strong ETag or
// Last-Modified that equal); otherwise it starts again from zero. With a size bound, blobs and
// partial downloads are evicted least recently used first until the cache fits, skipping any that a
// loader is using or downloading (its lock) — the one just fetched included. Every file call goes
// through the cache's Os (the loader's).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ballast/cache.hpp"
#include "remote/cache_files.hpp"
#include "remote/http_fetch.hpp"

namespace ballast {

// Keeps a cached blob from being evicted while it lives.
using CacheLease = std::shared_ptr<const void>;

struct CachedObject {
  std::filesystem::path path;
  CacheLease lease;
};

class ObjectCache {
 public:
  ObjectCache(std::filesystem::path cache_dir, uint64_t max_bytes, std::shared_ptr<const Os> os);

  // The blob for `key` holding an object of this size and ETag, downloaded with `fetch` (which
  // streams the object from the offset it is given to its end) unless already cached. `source`
  // names the object in errors and progress.
  CachedObject fetch(const std::string& key, const std::string& source, const HttpObjectInfo& info,
                     const RangeFetch& fetch,
                     const std::function<void(uint64_t)>& progress = {}) const;

  // The blob for `key` whatever object it holds (when the server cannot be asked).
  std::optional<CachedObject> cached(const std::string& key) const;
  // The blob for `key` when it holds an object of this size and ETag.
  std::optional<CachedObject> cached(const std::string& key, const HttpObjectInfo& info) const;

  // Evicts least recently used blobs and partial downloads not in use until the cache holds at
  // most max_bytes.
  void evict_to_fit() const;

  // Hashes every blob against the sha256 its record holds (ballast cache verify); with
  // `remove_corrupt`, deletes a corrupt blob and its record under the object's lock.
  std::vector<CachedBlobCheck> verify(bool remove_corrupt) const;

  const std::filesystem::path& folder() const { return folder_; }

 private:
  std::filesystem::path folder_;
  uint64_t max_bytes_;  // 0: unbounded
  std::shared_ptr<const Os> os_;
};

}  // namespace ballast
