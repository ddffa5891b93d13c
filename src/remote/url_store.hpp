// UrlStore: an HTTP(S) URL as a Store. Objects are URLs; the object beside one is resolved
// against its folder (confined: remote/url.hpp), its name in messages has the query and user
// information redacted, and the headers go with every request. With caching on, shards come
// through the object cache (remote/cached_url.hpp), else every read is a ranged GET.
#pragma once

#include <memory>

#include "ballast/source.hpp"
#include "io/store.hpp"
#include "remote/remote_context.hpp"

namespace ballast {

class UrlStore final : public Store {
 public:
  UrlStore(std::shared_ptr<const RemoteContext> remote, UrlSource source, ReadMode read_mode);

  std::string named() const override { return source_.url; }
  bool exists(const std::string& object) override;
  ShardInput open(const std::string& object) override;
  std::vector<std::byte> read_small(const std::string& object, uint64_t max_bytes) override;
  std::string sibling(const std::string& object, std::string_view relative) const override;
  std::string describe(const std::string& object) const override;
  // The URL's path: an index is told by its name, whatever its query.
  std::string path(const std::string& object) const override;
  // The full URL (describe() redacts the query) and the headers (credentials differ by them).
  std::string identity() const override;
  bool remote() const override { return true; }

 private:
  std::shared_ptr<const RemoteContext> remote_;
  UrlSource source_;
  ReadMode read_mode_;
};

}  // namespace ballast
