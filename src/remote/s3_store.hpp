// S3Store: a bucket of S3 (or an S3-compatible server) as a Store. Objects are keys; the key
// beside one is taken in its folder (confined: no `..`, no absolute name), and every request
// is signed with the settings read from the environment and AWS profile (remote/s3_settings)
// once, when the store first needs them. With caching on, shards come through the object cache.
#pragma once

#include <memory>
#include <mutex>

#include "ballast/source.hpp"
#include "io/store.hpp"
#include "remote/remote_context.hpp"
#include "remote/s3_settings.hpp"

namespace ballast {

class S3Store final : public Store {
 public:
  S3Store(std::shared_ptr<const RemoteContext> remote, S3Source source, ReadMode read_mode);

  std::string named() const override { return source_.key; }
  // The key itself, once the settings (and so the credentials) are found.
  std::vector<std::string> expand(const std::string& object) override;
  bool exists(const std::string& object) override;
  ShardInput open(const std::string& object) override;
  std::vector<std::byte> read_small(const std::string& object, uint64_t max_bytes) override;
  std::string sibling(const std::string& object, std::string_view relative) const override;
  std::string describe(const std::string& object) const override;
  std::string identity() const override;
  bool remote() const override { return true; }

 private:
  std::shared_ptr<const S3Settings> settings();

  std::shared_ptr<const RemoteContext> remote_;
  S3Source source_;
  ReadMode read_mode_;
  std::mutex settings_mutex_;
  std::shared_ptr<const S3Settings> settings_;  // once found
};

}  // namespace ballast
