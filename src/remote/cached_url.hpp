// URL and S3 objects through ballast's object cache (caching on). A shard is HEADed: when the
// cached blob still matches its size and ETag it is read as a local file (mapped when the read
// mode allows); otherwise it is read by ranges until a load wants most of it, and only then
// downloaded into the cache (LazyCachedSource), so a header parse downloads nothing. When the
// server cannot be reached, a blob cached earlier is used as it is. Small files (an index) and
// files beside a shard (ONNX external data) are downloaded into the cache when opened, a small
// file after `probe` (its size checked). A server without Range support is downloaded in one
// sequential stream; otherwise the download goes out as concurrent ranged GETs.
#pragma once

#include <memory>
#include <string>

#include "ballast/config.hpp"
#include "io/store.hpp"
#include "remote/object_probe.hpp"
#include "remote/remote_context.hpp"

namespace ballast {

// The object `target` names (a URL, or a signed S3 object), keyed by its URL: its cached blob,
// downloaded (after `probe`, when given) if needed.
CachedObject fetch_cached(const RemoteContext& remote, const HttpTarget& target,
                          const ObjectProbe& probe);
// That blob as a shard (no siblings), holding its cache lease while open.
ShardInput open_cached(const RemoteContext& remote, const HttpTarget& target, ReadMode read_mode);
// The object as a shard (no siblings): its cached blob when that is current, else a
// LazyCachedSource that downloads it into the object cache when a load wants most of it.
ShardInput open_lazily_cached(std::shared_ptr<const RemoteContext> remote, const HttpTarget& target,
                              ReadMode read_mode);

// The whole bytes of a small object (a shard index): from the object cache with caching on (so
// a cached checkpoint loads with the server gone), else one GET. Either way an object larger
// than `max_bytes` is refused by its stated size before its body is read.
std::vector<std::byte> read_small_object(const RemoteContext& remote, const HttpTarget& target,
                                         uint64_t max_bytes);

// A URL as a shard, as open_lazily_cached; files beside it (ONNX external data) are cached
// whole when opened.
ShardInput open_cached_url(std::shared_ptr<const RemoteContext> remote, const std::string& url,
                           const HttpHeaders& headers, ReadMode read_mode);

}  // namespace ballast
