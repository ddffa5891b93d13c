// URL and S3 objects through ballast's object cache (caching on): the object is HEADed, downloaded
// whole into the cache unless the cached blob still matches its size and ETag, and then read
// as a local file (mapped when the read mode allows). Before a download the object is probed
// by ranges (a shard's header parsed, an index's size checked): what the probe refuses is
// never downloaded, so nothing hostile lands in the cache. When the server cannot be reached, a
// blob cached earlier is used as it is. A server without Range support is downloaded in one
// sequential stream; otherwise the download goes out as concurrent ranged GETs.
#pragma once

#include <memory>
#include <string>

#include "ballast/config.hpp"
#include "loader/checkpoint.hpp"
#include "remote/object_probe.hpp"
#include "remote/remote_context.hpp"

namespace ballast {

// The object `target` names (a URL, or a signed S3 object), keyed by its URL: its cached blob,
// downloaded (after `probe`, when given) if needed.
CachedObject fetch_cached(const RemoteContext& remote, const HttpTarget& target,
                          const ObjectProbe& probe);
// That blob as a shard (no siblings), holding its cache lease while open.
ShardInput open_cached(const RemoteContext& remote, const HttpTarget& target, ReadMode read_mode,
                       const ObjectProbe& probe);

// The object as a shard read from its cached blob; files beside it (ONNX external data) are
// cached the same way, unprobed.
ShardInput open_cached_url(std::shared_ptr<const RemoteContext> remote, const std::string& url,
                           const HttpHeaders& headers, ReadMode read_mode,
                           const ObjectProbe& probe);

}  // namespace ballast
