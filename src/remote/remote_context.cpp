// RemoteContext construction and URL opening (see remote_context.hpp).
#include "remote/remote_context.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "remote/url.hpp"

namespace ballast {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

std::filesystem::path default_cache_dir() {
  if (std::string dir = env("BALLAST_CACHE"); !dir.empty()) return dir;
  if (std::string dir = env("XDG_CACHE_HOME"); !dir.empty())
    return std::filesystem::path(dir) / "ballast";
  return std::filesystem::path(env("HOME").empty() ? "/tmp" : env("HOME")) / ".cache" / "ballast";
}

std::function<void(uint64_t)> download_progress(const RemoteContext& remote, std::string name,
                                                uint64_t total) {
  if (!remote.progress) return {};
  struct Reported {
    std::mutex mutex;
    bool any = false;
    uint64_t done = 0;
  };
  return [listener = remote.progress, name = std::move(name), total,
          reported = std::make_shared<Reported>()](uint64_t done) {
    std::lock_guard lock(reported->mutex);
    if (reported->any && done <= reported->done) return;
    reported->any = true;
    reported->done = done;
    listener({name, done, total});
  };
}

std::shared_ptr<const RemoteContext> make_remote_context(const WeightLoaderConfig& config,
                                                         std::shared_ptr<const Os> os) {
  HttpSettings http;
  http.timeout_seconds = config.download_timeout_seconds;
  http.verify_tls = config.verify_tls;
  http.retry.max_retries = std::max(0, config.download_retries);
  http.default_headers = config.default_headers;
  http.ca_bundle = config.ca_bundle.string();
  if (http.ca_bundle.empty()) http.ca_bundle = env("BALLAST_CA_BUNDLE");
  if (http.ca_bundle.empty()) http.ca_bundle = env("CURL_CA_BUNDLE");
  auto remote = std::make_shared<RemoteContext>();
  remote->os = std::move(os);
  remote->http = std::make_shared<HttpClient>(std::move(http));
  remote->reads = {.chunk_bytes = config.download_chunk_bytes,
                   .concurrency = config.max_concurrent_downloads,
                   .one_request_without_validator = config.enable_integrity_checks};
  remote->caching = config.enable_caching;
  remote->integrity_checks = config.enable_integrity_checks;
  remote->cache_dir = config.cache_dir.empty() ? default_cache_dir() : config.cache_dir;
  remote->max_cache_size = config.max_cache_size;
  remote->objects =
      std::make_shared<ObjectCache>(remote->cache_dir, config.max_cache_size, remote->os);
  remote->progress = config.on_download_progress;
  return remote;
}

std::shared_ptr<ByteSource> open_url(const RemoteContext& remote, const std::string& url,
                                     const HttpHeaders& headers) {
  return open_http_source(remote.http, make_http_target(url, headers), remote.reads);
}

SiblingOpener make_url_opener(std::shared_ptr<const RemoteContext> remote, std::string base_url,
                              HttpHeaders headers) {
  return [remote = std::move(remote), base = std::move(base_url),
          headers = std::move(headers)](std::string_view relative) {
    return open_url(*remote, resolve_relative_url(base, relative), headers);
  };
}

}  // namespace ballast
