// RemoteContext: what a loader's remote sources share, built once from WeightLoaderConfig:
// the HTTP client (connection pool, TLS settings, retries), the ranged-read options and the
// cache settings.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>

#include "ballast/byte_source.hpp"
#include "ballast/config.hpp"
#include "ballast/parser.hpp"
#include "io/os.hpp"
#include "remote/http_byte_source.hpp"
#include "remote/object_cache.hpp"

namespace ballast {

struct RemoteContext {
  std::shared_ptr<HttpClient> http;
  HttpReadOptions reads;
  bool caching = true;
  bool integrity_checks = true;
  std::filesystem::path cache_dir;  // ballast's own cache (URL and S3 objects)
  uint64_t max_cache_size = 0;
  std::shared_ptr<const ObjectCache> objects;             // in cache_dir, bounded by max_cache_size
  std::function<void(const DownloadProgress&)> progress;  // may be empty
  // Every file call of the caches (the loader's Os): opening and reading the cached blobs and
  // their bookkeeping (writes, syncs, renames, locks, folders, links, listings, removals).
  std::shared_ptr<const Os> os = real_os();
};

// The object cache's root when the config names none: $BALLAST_CACHE, else
// $XDG_CACHE_HOME/ballast, else ~/.cache/ballast.
std::filesystem::path default_cache_dir();

// `os` makes every file call of the caches.
std::shared_ptr<const RemoteContext> make_remote_context(const WeightLoaderConfig& config,
                                                         std::shared_ptr<const Os> os);

// The progress of one download of `total` bytes named `name`, for the context's listener
// (empty when it has none): both the reading threads (arrivals) and the writer (bytes written)
// report, so only a value past the last one reported is passed on, once.
std::function<void(uint64_t)> download_progress(const RemoteContext& remote, std::string name,
                                                uint64_t total);

// Opens `url` (per-source headers on top of the config's default_headers) as a ranged-read
// ByteSource.
std::shared_ptr<ByteSource> open_url(const RemoteContext& remote, const std::string& url,
                                     const HttpHeaders& headers);

// Opens files beside `base_url` (ONNX external data), confined to its folder.
SiblingOpener make_url_opener(std::shared_ptr<const RemoteContext> remote, std::string base_url,
                              HttpHeaders headers);

}  // namespace ballast
