// Remote checkpoint resolution (see checkpoint_remote.hpp).
#include "loader/checkpoint_remote.hpp"

#include "ballast/error.hpp"
#include "loader/checkpoint_files.hpp"
#include "remote/remote_context.hpp"
#include "remote/url.hpp"

namespace ballast {
namespace {

ShardLocation url_shard(std::shared_ptr<const RemoteContext> remote, std::string url,
                        HttpHeaders headers) {
  std::string name = redact_url(url);
  return {std::move(name),
          [remote = std::move(remote), url = std::move(url), headers = std::move(headers)] {
            return ShardInput{
                open_url(*remote, url, headers), make_url_opener(remote, url, headers), {}};
          }};
}

RemoteShards resolve_url(const UrlSource& source, std::shared_ptr<const RemoteContext> remote,
                         const Limits& limits) {
  RemoteShards out;
  if (!url_path(source.url).ends_with(".index.json")) {
    out.shards.push_back(url_shard(std::move(remote), source.url, source.headers));
    return out;
  }
  auto bytes = http_get_small(*remote->http, make_http_target(source.url, source.headers),
                              limits.max_header_bytes);
  ShardIndex index = parse_shard_index(bytes, redact_url(source.url));
  for (const auto& name : index.shards)
    out.shards.push_back(url_shard(remote, resolve_relative_url(source.url, name), source.headers));
  out.weight_map = std::move(index.weight_map);
  out.metadata = std::move(index.metadata);
  return out;
}

}  // namespace

RemoteShards resolve_remote_shards(const WeightSource& source,
                                   std::shared_ptr<const RemoteContext> remote,
                                   const Limits& limits) {
  if (const auto* url = std::get_if<UrlSource>(&source.location))
    return resolve_url(*url, std::move(remote), limits);
  throw Error(ErrorCode::unsupported, "this source kind is not supported by this build yet",
              {.source = describe(source)});
}

}  // namespace ballast
