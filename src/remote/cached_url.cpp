// URL and S3 objects read through the object cache (see cached_url.hpp).
#include "remote/cached_url.hpp"

#include <algorithm>
#include <vector>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "remote/http_byte_source.hpp"
#include "remote/probed_download.hpp"
#include "remote/url.hpp"

namespace ballast {
namespace {

// A ByteSource that keeps a cache lease for as long as it is open.
class LeasedSource final : public ByteSource {
 public:
  LeasedSource(std::shared_ptr<ByteSource> inner, CacheLease lease)
      : inner_(std::move(inner)), lease_(std::move(lease)) {}
  uint64_t size() const override { return inner_->size(); }
  void read_at(uint64_t offset, std::span<std::byte> out) const override {
    inner_->read_at(offset, out);
  }
  std::shared_ptr<const MappedRegion> mapping() const override { return inner_->mapping(); }
  const std::string& name() const override { return inner_->name(); }

 private:
  std::shared_ptr<ByteSource> inner_;
  CacheLease lease_;
};

}  // namespace

CachedObject fetch_cached(const RemoteContext& remote, const HttpTarget& target,
                          const ObjectProbe& probe) {
  const std::string& url = target.url;
  HttpObjectInfo info;
  try {
    info = http_stat(*remote.http, target);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::network) throw;
    if (auto cached = remote.objects->cached(url)) return *cached;
    throw;
  }
  std::function<void(uint64_t)> progress;
  if (remote.progress)
    progress = [&](uint64_t done) { remote.progress({target.name, done, info.size}); };
  return remote.objects->fetch(
      url, target.name, info,
      [&](const ByteSink& sink) { probe_and_download(remote, target, info, probe, sink); },
      progress);
}

ShardInput open_cached(const RemoteContext& remote, const HttpTarget& target, ReadMode read_mode,
                       const ObjectProbe& probe) {
  CachedObject object = fetch_cached(remote, target, probe);
  auto file = open_file_source(object.path, {.allow_mmap = read_mode != ReadMode::read});
  return ShardInput{std::make_shared<LeasedSource>(std::move(file), std::move(object.lease)),
                    nullptr, object.path};
}

ShardInput open_cached_url(std::shared_ptr<const RemoteContext> remote, const std::string& url,
                           const HttpHeaders& headers, ReadMode read_mode,
                           const ObjectProbe& probe) {
  ShardInput input = open_cached(*remote, make_http_target(url, headers), read_mode, probe);
  input.siblings = [remote, url, headers, read_mode](std::string_view relative) {
    return open_cached_url(remote, resolve_relative_url(url, relative), headers, read_mode, {})
        .bytes;
  };
  return input;
}

}  // namespace ballast
