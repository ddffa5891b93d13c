// URL objects read through the object cache (see cached_url.hpp).
#include "remote/cached_url.hpp"

#include <algorithm>
#include <vector>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "remote/http_byte_source.hpp"
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

// Streams the whole object to `sink`: concurrent ranges when the server honours Range.
void download_object(const RemoteContext& remote, const HttpTarget& target,
                     const HttpObjectInfo& info, const ByteSink& sink) {
  if (!info.ranges || info.size == 0) {
    http_stream(*remote.http, target, info, 0, info.size, sink, nullptr);
    return;
  }
  auto source = open_http_source(remote.http, target, remote.reads);
  const uint64_t piece = std::max<uint64_t>(
      remote.reads.chunk_bytes * static_cast<uint64_t>(std::max(remote.reads.concurrency, 1)), 1);
  std::vector<std::byte> buffer(std::min(piece, info.size));
  for (uint64_t offset = 0; offset < info.size; offset += buffer.size()) {
    const uint64_t n = std::min<uint64_t>(buffer.size(), info.size - offset);
    source->read_at(offset, std::span(buffer.data(), n));
    sink(std::span<const std::byte>(buffer.data(), n));
  }
}

}  // namespace

CachedObject fetch_cached_url(const RemoteContext& remote, const std::string& url,
                              const HttpHeaders& headers) {
  const HttpTarget target = make_http_target(url, headers);
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
      [&](const ByteSink& sink) { download_object(remote, target, info, sink); }, progress);
}

ShardInput open_cached_url(std::shared_ptr<const RemoteContext> remote, const std::string& url,
                           const HttpHeaders& headers, ReadMode read_mode) {
  CachedObject object = fetch_cached_url(*remote, url, headers);
  auto file = open_file_source(object.path, {.allow_mmap = read_mode != ReadMode::read});
  SiblingOpener siblings = [remote, url, headers, read_mode](std::string_view relative) {
    return open_cached_url(remote, resolve_relative_url(url, relative), headers, read_mode).bytes;
  };
  return ShardInput{std::make_shared<LeasedSource>(std::move(file), std::move(object.lease)),
                    std::move(siblings), object.path};
}

}  // namespace ballast
