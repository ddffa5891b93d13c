// URL and S3 objects read through the object cache (see cached_url.hpp).
#include "remote/cached_url.hpp"

#include <variant>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "remote/http_byte_source.hpp"
#include "remote/lazy_cached_source.hpp"
#include "remote/probed_download.hpp"
#include "remote/url.hpp"
#include "util/error_text.hpp"

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

std::shared_ptr<ByteSource> open_blob(CachedObject object, ReadMode read_mode,
                                      const RemoteContext& remote) {
  auto file =
      open_file_source(object.path, {.allow_mmap = read_mode != ReadMode::read, .os = remote.os});
  return std::make_shared<LeasedSource>(std::move(file), std::move(object.lease));
}

// The object's blob in the cache, downloaded unless it holds the version `info` describes:
// after `probe` (when given), or after the first bytes of it that `prefix` holds. Every request
// of the download is pinned to that version.
CachedObject fetch_version(const RemoteContext& remote, const HttpTarget& target,
                           const HttpObjectInfo& info, const ObjectProbe& probe,
                           std::span<const std::byte> prefix = {}) {
  const auto progress = download_progress(remote, target.name, info.size);
  return remote.objects->fetch(
      target.url, target.name, info,
      [&](uint64_t from, const ByteSink& sink) {
        if (probe) return probe_and_download(remote, target, info, probe, from, sink, progress);
        download_object(remote, target, info, prefix, from, sink, progress);
      },
      progress);
}

// HEAD of the object, or, when the server cannot be reached, the blob cached earlier.
std::variant<HttpObjectInfo, CachedObject> stat_or_cached(const RemoteContext& remote,
                                                          const HttpTarget& target) {
  try {
    return http_stat(*remote.http, target);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::network) throw;
    if (auto cached = remote.objects->cached(target.url)) return *cached;
    throw;
  }
}

}  // namespace

CachedObject fetch_cached(const RemoteContext& remote, const HttpTarget& target,
                          const ObjectProbe& probe) {
  auto stat = stat_or_cached(remote, target);
  if (auto* cached = std::get_if<CachedObject>(&stat)) return *cached;
  return fetch_version(remote, target, std::get<HttpObjectInfo>(stat), probe);
}

std::vector<std::byte> read_small_object(const RemoteContext& remote, const HttpTarget& target,
                                         uint64_t max_bytes) {
  if (!remote.caching) return http_get_small(*remote.http, target, max_bytes);
  CachedObject object = fetch_cached(remote, target, [&](std::shared_ptr<ByteSource> ranged) {
    if (ranged->size() > max_bytes)
      throw Error(ErrorCode::limit_exceeded,
                  limit_message("file size", ranged->size(), "max_header_bytes", max_bytes),
                  {.source = target.name});
  });
  return read_small_file(object.path, max_bytes, target.name, remote.os);
}

ShardInput open_cached(const RemoteContext& remote, const HttpTarget& target, ReadMode read_mode) {
  CachedObject object = fetch_cached(remote, target, {});
  const auto path = object.path;
  return ShardInput{open_blob(std::move(object), read_mode, remote), nullptr, path};
}

ShardInput open_lazily_cached(std::shared_ptr<const RemoteContext> remote, const HttpTarget& target,
                              ReadMode read_mode) {
  auto stat = stat_or_cached(*remote, target);
  if (auto* cached = std::get_if<CachedObject>(&stat)) {
    const auto path = cached->path;
    return ShardInput{open_blob(std::move(*cached), read_mode, *remote), nullptr, path};
  }
  const HttpObjectInfo& info = std::get<HttpObjectInfo>(stat);
  if (auto current = remote->objects->cached(target.url, info)) {
    const auto path = current->path;
    return ShardInput{open_blob(std::move(*current), read_mode, *remote), nullptr, path};
  }
  auto ranged = open_http_source(remote->http, target, info, remote->reads);
  CacheFill fill = [remote, target, info, read_mode](std::vector<std::byte> prefix) {
    return open_blob(fetch_version(*remote, target, info, {}, prefix), read_mode, *remote);
  };
  return ShardInput{
      std::make_shared<LazyCachedSource>(std::move(ranged), std::move(fill)), nullptr, {}};
}

ShardInput open_cached_url(std::shared_ptr<const RemoteContext> remote, const std::string& url,
                           const HttpHeaders& headers, ReadMode read_mode) {
  ShardInput input = open_lazily_cached(remote, make_http_target(url, headers), read_mode);
  input.siblings = [remote, url, headers, read_mode](std::string_view relative) {
    return open_cached(*remote, make_http_target(resolve_relative_url(url, relative), headers),
                       read_mode)
        .bytes;
  };
  return input;
}

}  // namespace ballast
