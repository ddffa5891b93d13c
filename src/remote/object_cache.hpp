// ObjectCache: ballast's own download cache for URL and S3 objects (the Hub has its own, in
// huggingface_hub's layout). One flat folder, `<cache_dir>/objects/`, three files per object,
// named by the sha256 of the object's key (its full URL, or s3://bucket/key at an endpoint):
//
//   <hash>.blob    the bytes, complete and checked (written as <hash>.blob.incomplete)
//   <hash>.json    {"source", "etag", "size"}: the object the blob holds; its mtime is the last use
//   <hash>.lock    flock: exclusive while downloading or evicting, shared while a loader uses
//                  the blob
//
// A cached blob is used when the object's current size and ETag (from a HEAD) match the record.
// With a size bound, blobs are evicted least recently used first until the cache fits, skipping
// any that a loader is using (its shared lock) — the one just fetched included.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ballast/cache.hpp"
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
  ObjectCache(std::filesystem::path cache_dir, uint64_t max_bytes);

  // The blob for `key` holding an object of this size and ETag, downloaded with `fetch` (which
  // streams the whole object to its sink) unless already cached. `source` names the object in
  // errors and progress.
  CachedObject fetch(const std::string& key, const std::string& source, const HttpObjectInfo& info,
                     const std::function<void(const ByteSink&)>& fetch,
                     const std::function<void(uint64_t)>& progress = {}) const;

  // The blob for `key` whatever object it holds (when the server cannot be asked).
  std::optional<CachedObject> cached(const std::string& key) const;

  // Evicts least recently used blobs not in use until the cache holds at most max_bytes.
  void evict_to_fit() const;

  // Hashes every blob against the sha256 its record holds (ballast cache verify); with
  // `remove_corrupt`, deletes a corrupt blob and its record under the object's lock.
  std::vector<CachedBlobCheck> verify(bool remove_corrupt) const;

  const std::filesystem::path& folder() const { return folder_; }

 private:
  std::filesystem::path folder_;
  uint64_t max_bytes_;  // 0: unbounded
};

}  // namespace ballast
