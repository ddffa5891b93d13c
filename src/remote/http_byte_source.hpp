// A ByteSource over one HTTP(S) object: its size comes from HEAD at open, and every read_at is
// a ranged GET (checked by http_fetch). Reads larger than a chunk are split into chunks fetched
// concurrently on up to `concurrency` connections. Against a server that ignores Range, every
// read downloads the object sequentially from its start (use the cache for such servers). An
// object without validator is read in one request at most (HttpReadOptions).
#pragma once

#include <functional>

#include <cstdint>
#include <memory>
#include <string>

#include "ballast/byte_source.hpp"
#include "remote/http_fetch.hpp"

namespace ballast {

struct HttpReadOptions {
  uint64_t chunk_bytes = 16 << 20;
  int concurrency = 8;
  // Integrity checks: an object with neither ETag nor Last-Modified (has_validator) is read in
  // one request at most, since nothing would tell a second request's version from the first's;
  // a read that needs another is Error(integrity).
  bool one_request_without_validator = true;
  // Hears the size of every piece of body as it arrives, from the reading threads (progress
  // of a large read before it completes).
  std::function<void(uint64_t)> on_bytes;
};

// Opens (HEADs) the object; throws not_found, auth or network.
std::shared_ptr<ByteSource> open_http_source(std::shared_ptr<HttpClient> client, HttpTarget target,
                                             HttpReadOptions options);
// The object as `info` (from http_stat) describes it: no request until the first read.
std::shared_ptr<ByteSource> open_http_source(std::shared_ptr<HttpClient> client, HttpTarget target,
                                             HttpObjectInfo info, HttpReadOptions options);

}  // namespace ballast
