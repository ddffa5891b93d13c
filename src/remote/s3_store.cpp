// An S3 bucket as a Store (see s3_store.hpp).
#include "remote/s3_store.hpp"

#include <fmt/format.h>

#include "remote/cached_url.hpp"
#include "remote/http_fetch.hpp"
#include "remote/s3_object.hpp"
#include "remote/url.hpp"

namespace ballast {
namespace {

// The folder part of an S3 key ("a/b/" for "a/b/c"), "" at the bucket's top.
std::string key_folder(const std::string& key) {
  const size_t slash = key.rfind('/');
  return slash == std::string::npos ? "" : key.substr(0, slash + 1);
}

// One S3 object: through the object cache with caching on (a shard lazily, as a URL's; a file
// beside one whole), else read by ranges.
ShardInput open_s3_object(std::shared_ptr<const RemoteContext> remote, const HttpTarget& target,
                          ReadMode read_mode, bool shard) {
  if (!remote->caching)
    return ShardInput{open_http_source(remote->http, target, remote->reads), nullptr, {}};
  return shard ? open_lazily_cached(std::move(remote), target, read_mode)
               : open_cached(*remote, target, read_mode);
}

}  // namespace

S3Store::S3Store(std::shared_ptr<const RemoteContext> remote, S3Source source, ReadMode read_mode)
    : remote_(std::move(remote)), source_(std::move(source)), read_mode_(read_mode) {}

std::shared_ptr<const S3Settings> S3Store::settings() {
  std::lock_guard lock(settings_mutex_);
  if (!settings_) settings_ = std::make_shared<const S3Settings>(s3_settings_from_env(source_));
  return settings_;
}

std::vector<std::string> S3Store::expand(const std::string& object) {
  settings();
  return {object};
}

bool S3Store::exists(const std::string& object) {
  return http_exists(*remote_->http, s3_target(*settings(), source_.bucket, object));
}

// Files beside the object (ONNX external data) are keys in its folder.
ShardInput S3Store::open(const std::string& object) {
  auto settings = this->settings();
  ShardInput input =
      open_s3_object(remote_, s3_target(*settings, source_.bucket, object), read_mode_, true);
  input.siblings = [remote = remote_, settings, bucket = source_.bucket,
                    folder = key_folder(object), where = describe(object),
                    read_mode = read_mode_](std::string_view relative) {
    const std::string key = folder + confined_relative_path(relative, where);
    return open_s3_object(remote, s3_target(*settings, bucket, key), read_mode, false).bytes;
  };
  return input;
}

std::vector<std::byte> S3Store::read_small(const std::string& object, uint64_t max_bytes) {
  return read_small_object(*remote_, s3_target(*settings(), source_.bucket, object), max_bytes);
}

std::string S3Store::sibling(const std::string& object, std::string_view relative) const {
  return key_folder(object) + confined_relative_path(relative, describe(object));
}

std::string S3Store::describe(const std::string& object) const {
  return fmt::format("s3://{}/{}", source_.bucket, object);
}

std::string S3Store::identity() const {
  return fmt::format("|region={}|endpoint={}", source_.region.value_or(""),
                     source_.endpoint.value_or(""));
}

}  // namespace ballast
