// Remote checkpoint resolution (see checkpoint_remote.hpp).
#include "loader/checkpoint_remote.hpp"

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "loader/checkpoint_files.hpp"
#include "remote/cached_url.hpp"
#include "remote/http_byte_source.hpp"
#include "remote/hub_cache.hpp"
#include "remote/hub_client.hpp"
#include "remote/hub_repo_files.hpp"
#include "remote/lazy_cached_source.hpp"
#include "remote/remote_context.hpp"
#include "remote/s3_object.hpp"
#include "remote/url.hpp"

namespace ballast {
namespace {

// With caching on, the object's header is read by ranges and the object is downloaded into the
// object cache only when a load wants most of it (a cached one is read from there); with it
// off, it is read by ranges.
ShardLocation url_shard(std::shared_ptr<const RemoteContext> remote, std::string url,
                        HttpHeaders headers, ReadMode read_mode) {
  std::string name = redact_url(url);
  return {std::move(name), [remote = std::move(remote), url = std::move(url),
                            headers = std::move(headers), read_mode] {
            if (remote->caching) return open_cached_url(remote, url, headers, read_mode);
            return ShardInput{
                open_url(*remote, url, headers), make_url_opener(remote, url, headers), {}};
          }};
}

// The index's bytes (a URL or a signed S3 object): from the object cache with caching on (so a
// cached checkpoint loads with the server gone), else one GET. Either way an index larger than
// max_header_bytes is refused by its stated size before its body is read.
std::vector<std::byte> read_index(const RemoteContext& remote, const HttpTarget& target,
                                  const Limits& limits) {
  const uint64_t max_bytes = limits.max_header_bytes;
  if (!remote.caching) return http_get_small(*remote.http, target, max_bytes);
  CachedObject object = fetch_cached(remote, target, [&](std::shared_ptr<ByteSource> ranged) {
    if (ranged->size() > max_bytes)
      throw Error(ErrorCode::limit_exceeded,
                  fmt::format("the file is larger than the {}-byte limit", max_bytes),
                  {.source = target.name});
  });
  return read_small_file(object.path, max_bytes, target.name);
}

RemoteShards resolve_url(const UrlSource& source, std::shared_ptr<const RemoteContext> remote,
                         const Limits& limits, ReadMode read_mode) {
  RemoteShards out;
  if (!url_path(source.url).ends_with(".index.json")) {
    out.shards.push_back(url_shard(std::move(remote), source.url, source.headers, read_mode));
    return out;
  }
  const HttpTarget index_target = make_http_target(source.url, source.headers);
  ShardIndex index =
      parse_shard_index(read_index(*remote, index_target, limits), index_target.name, limits);
  for (const auto& name : index.shards)
    out.shards.push_back(
        url_shard(remote, resolve_relative_url(source.url, name), source.headers, read_mode));
  out.weight_map = std::move(index.weight_map);
  out.metadata = std::move(index.metadata);
  return out;
}

// The folder part of an S3 key ("a/b/" for "a/b/c"), "" at the bucket's top.
std::string key_folder(const std::string& key) {
  const size_t slash = key.rfind('/');
  return slash == std::string::npos ? "" : key.substr(0, slash + 1);
}

// One S3 object: through the object cache with caching on (a shard lazily, as url_shard; a file
// beside one whole), else read by ranges.
ShardInput open_s3_object(std::shared_ptr<const RemoteContext> remote, const HttpTarget& target,
                          ReadMode read_mode, bool shard) {
  if (!remote->caching)
    return ShardInput{open_http_source(remote->http, target, remote->reads), nullptr, {}};
  return shard ? open_lazily_cached(std::move(remote), target, read_mode)
               : open_cached(*remote, target, read_mode);
}

// ONNX external data of an S3 object: keys beside `key`, confined to its folder.
HttpTarget s3_sibling(const S3Settings& settings, const std::string& bucket, const std::string& key,
                      std::string_view relative) {
  const std::string where = fmt::format("s3://{}/{}", bucket, key);
  return s3_target(settings, bucket, key_folder(key) + confined_relative_path(relative, where));
}

ShardLocation s3_shard(std::shared_ptr<const RemoteContext> remote,
                       std::shared_ptr<const S3Settings> settings, std::string bucket,
                       std::string key, ReadMode read_mode) {
  std::string name = fmt::format("s3://{}/{}", bucket, key);
  return {std::move(name), [remote = std::move(remote), settings = std::move(settings),
                            bucket = std::move(bucket), key = std::move(key), read_mode] {
            ShardInput input =
                open_s3_object(remote, s3_target(*settings, bucket, key), read_mode, true);
            input.siblings = [remote, settings, bucket, key, read_mode](std::string_view relative) {
              return open_s3_object(remote, s3_sibling(*settings, bucket, key, relative), read_mode,
                                    false)
                  .bytes;
            };
            return input;
          }};
}

RemoteShards resolve_s3(const S3Source& source, std::shared_ptr<const RemoteContext> remote,
                        const Limits& limits, ReadMode read_mode) {
  auto settings = std::make_shared<const S3Settings>(s3_settings_from_env(source));
  RemoteShards out;
  if (!source.key.ends_with(".index.json")) {
    out.shards.push_back(
        s3_shard(std::move(remote), settings, source.bucket, source.key, read_mode));
    return out;
  }
  const HttpTarget index_target = s3_target(*settings, source.bucket, source.key);
  ShardIndex index =
      parse_shard_index(read_index(*remote, index_target, limits), index_target.name, limits);
  for (const auto& name : index.shards)
    out.shards.push_back(s3_shard(
        remote, settings, source.bucket,
        key_folder(source.key) + confined_relative_path(name, index_target.name), read_mode));
  out.weight_map = std::move(index.weight_map);
  out.metadata = std::move(index.metadata);
  return out;
}

// What a whole repository's weights are, tried in this order (the first present wins, as in
// the Hub's own libraries: safetensors before PyTorch).
constexpr const char* kRepoWeightFiles[] = {"model.safetensors.index.json", "model.safetensors",
                                            "pytorch_model.bin.index.json", "pytorch_model.bin"};

// The folder part of a repository path ("a/b/" for "a/b/c"), "" at the top.
std::string path_folder(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// A Hub file as a shard. Online with caching on, a file not in the Hub cache is read by ranges
// and downloaded into the cache only when a load wants most of it (files beside it, ONNX
// external data, are downloaded when opened); otherwise (cached, offline, caching off) the
// HubClient opens it.
ShardLocation hub_shard(const std::shared_ptr<HubClient>& hub, const RemoteContext& remote,
                        const HubRepoCache& cache, const std::string& revision,
                        const std::string& path, ReadMode read_mode) {
  ShardLocation location = hub->shard(revision, path, read_mode);
  if (!remote.caching || hub->offline()) return location;
  location.open = [hub, cache, revision, path, read_mode, open = location.open] {
    if (cache.cached(revision, path)) return open();  // a commit's cached file: no request
    // Another revision's blob of the same bytes is linked, not downloaded.
    const HubFileInfo info = hub->head(revision, path);
    if (cache.has_blob(info.etag, info.size)) return open();
    const std::string folder = path_folder(path);
    SiblingOpener siblings = [hub, revision, folder, read_mode](std::string_view relative) {
      const std::string sibling =
          folder + confined_relative_path(relative, hub->describe(revision, folder));
      return hub->shard(revision, sibling, read_mode).open().bytes;
    };
    // The header bytes read already start the blob's partial download, which HubClient continues.
    CacheFill fill = [hub, cache, etag = info.etag, revision, path,
                      read_mode](std::vector<std::byte> prefix) {
      cache.begin_partial(etag, prefix);
      return open_file_source(hub->download(revision, path), file_open_options(read_mode));
    };
    return ShardInput{
        std::make_shared<LazyCachedSource>(hub->open_ranged(revision, path), std::move(fill)),
        std::move(siblings),
        {}};
  };
  return location;
}

RemoteShards resolve_hub(const HuggingFaceSource& source,
                         std::shared_ptr<const RemoteContext> remote, const Limits& limits,
                         ReadMode read_mode) {
  const HubSettings settings = hub_settings_from_env(source.cache_dir);
  const HubRepoCache cache(settings.cache_dir, source.repo_id);
  auto hub = std::make_shared<HubClient>(remote, settings, source.repo_id);
  std::string revision = source.revision.value_or("main");
  std::string path = source.filename;
  if (path.empty() && !source.quant_tag.empty()) {  // hf://org/repo-GGUF:Q4_K_M
    const HubRepoFiles tagged = list_hub_gguf_files(*hub, revision, source.quant_tag);
    RemoteShards out;
    for (const std::string& file : tagged.paths)
      out.shards.push_back(hub_shard(hub, *remote, cache, tagged.commit, file, read_mode));
    return out;
  }
  if (path.empty()) {
    for (const char* candidate : kRepoWeightFiles)
      if (hub->exists(revision, candidate)) {
        path = candidate;
        break;
      }
    // A missing repository or revision, or a gated one, says so (the listing's error).
    if (path.empty() && !hub->offline()) list_hub_files(*hub, revision);
    if (path.empty())
      throw Error(ErrorCode::not_found,
                  hub->offline() ? "offline (HF_HUB_OFFLINE) and the repository's weights are not "
                                   "cached (model.safetensors[.index.json] or "
                                   "pytorch_model.bin[.index.json]); " +
                                       hub->fetch_hint(revision)
                                 : "the repository has no model.safetensors[.index.json] or "
                                   "pytorch_model.bin[.index.json]; name the file",
                  {.source = hub->describe(revision, "")});
  }
  path = confined_relative_path(path, hub->describe(revision, ""));
  // Every file of the checkpoint comes from one commit, even if the branch moves meanwhile.
  if (!hub->offline()) revision = hub->commit(revision, path);
  RemoteShards out;
  if (!path.ends_with(".index.json")) {
    out.shards.push_back(hub_shard(hub, *remote, cache, revision, path, read_mode));
    return out;
  }
  auto bytes = hub->read_small(revision, path, limits.max_header_bytes);
  ShardIndex index = parse_shard_index(bytes, hub->describe(revision, path), limits);
  const std::string folder = path_folder(path);
  for (const auto& name : index.shards)
    out.shards.push_back(
        hub_shard(hub, *remote, cache, revision,
                  folder + confined_relative_path(name, hub->describe(revision, path)), read_mode));
  out.weight_map = std::move(index.weight_map);
  out.metadata = std::move(index.metadata);
  return out;
}

}  // namespace

RemoteShards resolve_remote_shards(const WeightSource& source,
                                   std::shared_ptr<const RemoteContext> remote,
                                   const Limits& limits, ReadMode read_mode) {
  if (const auto* url = std::get_if<UrlSource>(&source.location))
    return resolve_url(*url, std::move(remote), limits, read_mode);
  if (const auto* hub = std::get_if<HuggingFaceSource>(&source.location))
    return resolve_hub(*hub, std::move(remote), limits, read_mode);
  if (const auto* s3 = std::get_if<S3Source>(&source.location))
    return resolve_s3(*s3, std::move(remote), limits, read_mode);
  throw Error(ErrorCode::unsupported, "this source kind is not supported by this build yet",
              {.source = describe(source)});
}

}  // namespace ballast
