// Remote checkpoint resolution (see checkpoint_remote.hpp).
#include "loader/checkpoint_remote.hpp"

#include "ballast/error.hpp"
#include "loader/checkpoint_files.hpp"
#include "remote/hub_client.hpp"
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
  ShardIndex index = parse_shard_index(bytes, redact_url(source.url), limits);
  for (const auto& name : index.shards)
    out.shards.push_back(url_shard(remote, resolve_relative_url(source.url, name), source.headers));
  out.weight_map = std::move(index.weight_map);
  out.metadata = std::move(index.metadata);
  return out;
}

// What a whole repository's weights are, tried in this order (the first present wins, as in
// the Hub's own libraries: safetensors before PyTorch).
constexpr const char* kRepoWeightFiles[] = {"model.safetensors.index.json", "model.safetensors",
                                            "pytorch_model.bin.index.json", "pytorch_model.bin"};

RemoteShards resolve_hub(const HuggingFaceSource& source,
                         std::shared_ptr<const RemoteContext> remote, const Limits& limits,
                         ReadMode read_mode) {
  auto hub =
      std::make_shared<HubClient>(remote, hub_settings_from_env(source.cache_dir), source.repo_id);
  std::string revision = source.revision.value_or("main");
  std::string path = source.filename;
  if (path.empty()) {
    for (const char* candidate : kRepoWeightFiles)
      if (hub->exists(revision, candidate)) {
        path = candidate;
        break;
      }
    if (path.empty())
      throw Error(ErrorCode::not_found,
                  "the repository has no model.safetensors[.index.json] or "
                  "pytorch_model.bin[.index.json]; name the file",
                  {.source = hub->describe(revision, "")});
  }
  path = confined_relative_path(path, hub->describe(revision, ""));
  // Every file of the checkpoint comes from one commit, even if the branch moves meanwhile.
  if (!hub->offline()) revision = hub->commit(revision, path);
  RemoteShards out;
  if (!path.ends_with(".index.json")) {
    out.shards.push_back(hub->shard(revision, path, read_mode));
    return out;
  }
  auto bytes = hub->read_small(revision, path, limits.max_header_bytes);
  ShardIndex index = parse_shard_index(bytes, hub->describe(revision, path), limits);
  const std::string folder =
      path.find('/') == std::string::npos ? "" : path.substr(0, path.rfind('/') + 1);
  for (const auto& name : index.shards)
    out.shards.push_back(hub->shard(
        revision, folder + confined_relative_path(name, hub->describe(revision, path)), read_mode));
  out.weight_map = std::move(index.weight_map);
  out.metadata = std::move(index.metadata);
  return out;
}

}  // namespace

RemoteShards resolve_remote_shards(const WeightSource& source,
                                   std::shared_ptr<const RemoteContext> remote,
                                   const Limits& limits, ReadMode read_mode) {
  if (const auto* url = std::get_if<UrlSource>(&source.location))
    return resolve_url(*url, std::move(remote), limits);
  if (const auto* hub = std::get_if<HuggingFaceSource>(&source.location))
    return resolve_hub(*hub, std::move(remote), limits, read_mode);
  throw Error(ErrorCode::unsupported, "this source kind is not supported by this build yet",
              {.source = describe(source)});
}

}  // namespace ballast
