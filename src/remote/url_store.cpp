// A URL as a Store (see url_store.hpp).
#include "remote/url_store.hpp"

#include <fmt/format.h>

#include "remote/cached_url.hpp"
#include "remote/http_fetch.hpp"
#include "remote/url.hpp"
#include "util/redact_url.hpp"

namespace ballast {

UrlStore::UrlStore(std::shared_ptr<const RemoteContext> remote, UrlSource source,
                   ReadMode read_mode)
    : remote_(std::move(remote)), source_(std::move(source)), read_mode_(read_mode) {}

bool UrlStore::exists(const std::string& object) {
  return http_exists(*remote_->http, make_http_target(object, source_.headers));
}

// With caching on, the object's header is read by ranges and the object is downloaded into the
// object cache only when a load wants most of it (a cached one is read from there); with it
// off, it is read by ranges.
ShardInput UrlStore::open(const std::string& object) {
  if (remote_->caching) return open_cached_url(remote_, object, source_.headers, read_mode_);
  return {open_url(*remote_, object, source_.headers),
          make_url_opener(remote_, object, source_.headers),
          {}};
}

std::vector<std::byte> UrlStore::read_small(const std::string& object, uint64_t max_bytes) {
  return read_small_object(*remote_, make_http_target(object, source_.headers), max_bytes);
}

std::string UrlStore::sibling(const std::string& object, std::string_view relative) const {
  return resolve_relative_url(object, relative);
}

std::string UrlStore::describe(const std::string& object) const { return redact_url(object); }

std::string UrlStore::path(const std::string& object) const { return url_path(object); }

std::string UrlStore::identity() const {
  std::string key = "|" + source_.url;
  for (const auto& [name, value] : source_.headers) key += fmt::format("|{}={}", name, value);
  return key;
}

}  // namespace ballast
