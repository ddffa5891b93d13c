// URL objects through ballast's object cache (caching on): the object is HEADed, downloaded
// whole into the cache unless the cached blob still matches its size and ETag, and then read
// as a local file (mapped when the read mode allows). When the server cannot be reached, a
// blob cached earlier is used as it is. A server without Range support is downloaded in one
// sequential stream; otherwise the download goes out as concurrent ranged GETs.
#pragma once

#include <memory>
#include <string>

#include "ballast/config.hpp"
#include "loader/checkpoint.hpp"
#include "remote/remote_context.hpp"

namespace ballast {

// The object's cached blob, downloaded if needed.
CachedObject fetch_cached_url(const RemoteContext& remote, const std::string& url,
                              const HttpHeaders& headers);

// The object as a shard read from its cached blob; files beside it (ONNX external data) are
// cached the same way.
ShardInput open_cached_url(std::shared_ptr<const RemoteContext> remote, const std::string& url,
                           const HttpHeaders& headers, ReadMode read_mode);

}  // namespace ballast
