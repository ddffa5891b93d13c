// Hugging Face Hub files (see hub_client.hpp).
#include "remote/hub_client.hpp"

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "remote/http_byte_source.hpp"
#include "remote/hub_blob_check.hpp"
#include "remote/hub_errors.hpp"
#include "remote/probed_download.hpp"
#include "remote/url.hpp"
#include "util/error_text.hpp"

namespace ballast {
namespace {

std::string normalize_etag(std::string etag) {
  if (etag.starts_with("W/")) etag.erase(0, 2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"')
    etag = etag.substr(1, etag.size() - 2);
  return etag;
}

bool is_sha256(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::optional<uint64_t> number(const std::string* text) {
  if (text == nullptr || text->empty()) return std::nullopt;
  try {
    size_t used = 0;
    uint64_t v = std::stoull(*text, &used);
    if (used == text->size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace

HubClient::HubClient(std::shared_ptr<const RemoteContext> remote, HubSettings settings,
                     std::string repo)
    : remote_(std::move(remote)),
      settings_(std::move(settings)),
      repo_(std::move(repo)),
      cache_(settings_.cache_dir, repo_, remote_->os) {
  if (repo_.empty() || repo_.find("..") != std::string::npos || repo_.front() == '/' ||
      repo_.find('\\') != std::string::npos)
    throw Error(ErrorCode::invalid_argument, fmt::format("bad repository id '{}'", repo_));
}

std::string HubClient::url(const std::string& revision, const std::string& path) const {
  return fmt::format("{}/{}/resolve/{}/{}", settings_.endpoint, repo_, url_quote(revision, false),
                     url_quote(path, true));
}

std::string HubClient::describe(const std::string& revision, const std::string& path) const {
  return fmt::format("hf://{}@{}/{}", repo_, revision, path);
}

std::string HubClient::fetch_hint(const std::string& revision, const std::string& path) const {
  // A repo id without an organisation needs the revision before a path (hf://gpt2@main/x).
  const bool show_revision =
      revision != "main" || (!path.empty() && repo_.find('/') == std::string::npos);
  return fmt::format("run `ballast fetch hf://{}{}{}` without HF_HUB_OFFLINE to download it", repo_,
                     show_revision ? "@" + revision : "", path.empty() ? "" : "/" + path);
}

HttpHeaders HubClient::auth_headers() const {
  if (settings_.token.empty()) return {};
  return {{"Authorization", "Bearer " + settings_.token}};
}

HubFileInfo HubClient::head(const std::string& revision, const std::string& path,
                            bool retries) const {
  const std::string where = describe(revision, path);
  HttpRequest request{.url = url(revision, path),
                      .headers = auth_headers(),
                      .head = true,
                      .follow_redirects = false};
  HttpResult r =
      retries ? http_perform_retried(*remote_->http, request) : remote_->http->perform(request);
  const long status = r.response.status;
  if (r.curl_code != 0 || status < 200 || status >= 400)
    throw_hub_error(r, where, !settings_.token.empty());
  HubFileInfo info;
  if (const std::string* commit = r.response.header("x-repo-commit")) info.commit = *commit;
  const std::string* etag = r.response.header("x-linked-etag");
  if (etag == nullptr) etag = r.response.header("etag");
  if (etag) info.etag = normalize_etag(*etag);
  auto size = number(r.response.header("x-linked-size"));
  if (!size) size = number(r.response.header("content-length"));
  if (!is_commit_hash(info.commit) || info.etag.empty() || !size ||
      info.etag.find_first_of("/\\.") != std::string::npos)
    throw Error(ErrorCode::network,
                "the Hub's answer lacks X-Repo-Commit, an ETag or a size (is HF_ENDPOINT a Hub?)",
                {.source = where});
  info.size = *size;
  if (is_commit_hash(revision) && info.commit != revision)
    throw Error(ErrorCode::integrity,
                fmt::format("the Hub answers for commit {} when asked for commit {}: the "
                            "repository's answers disagree, no snapshot is written",
                            info.commit, revision),
                {.source = where});
  return info;
}

std::optional<std::filesystem::path> HubClient::cached(const std::string& revision,
                                                       const std::string& path) const {
  auto commit = cache_.commit_of(revision);
  return commit ? cache_.cached(*commit, path) : std::nullopt;
}

std::optional<HubFileInfo> HubClient::resolve(const std::string& revision,
                                              const std::string& path) const {
  if (settings_.offline) return std::nullopt;
  const bool in_cache = remote_->caching && cached(revision, path);
  if (in_cache && is_commit_hash(revision)) return std::nullopt;  // a commit never changes
  try {
    return head(revision, path, /*retries=*/!in_cache);
  } catch (const Error& e) {
    if (!in_cache || e.code() == ErrorCode::not_found) throw;
    return std::nullopt;
  }
}

bool HubClient::exists(const std::string& revision, const std::string& path) const {
  try {
    return resolve(revision, path) || cached(revision, path);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::not_found) return false;
    throw;
  }
}

std::string HubClient::commit(const std::string& revision, const std::string& path) const {
  if (auto info = resolve(revision, path)) {
    if (remote_->caching) cache_.write_ref(revision, info->commit);
    return info->commit;
  }
  auto commit = cache_.commit_of(revision);
  if (!commit)
    throw Error(ErrorCode::not_found,
                fmt::format("offline (HF_HUB_OFFLINE) and the revision is not cached; {}",
                            fetch_hint(revision, path)),
                {.source = describe(revision, path)});
  return *commit;
}

std::filesystem::path HubClient::download(const std::string& revision, const std::string& path,
                                          std::optional<uint64_t> max_bytes,
                                          const ObjectProbe& probe) const {
  const std::string where = describe(revision, path);
  // A cached blob is checked against its name before use (integrity checks on): bytes that
  // changed on disk, even with their modification time kept, are never used silently.
  auto checked = [&](std::filesystem::path file) {
    if (remote_->integrity_checks) check_cached_hub_blob(remote_->os, file, where);
    return file;
  };
  const std::optional<HubFileInfo> resolved = resolve(revision, path);
  if (!resolved) {
    if (auto file = cached(revision, path)) return checked(*file);
    throw Error(ErrorCode::not_found,
                fmt::format("offline (HF_HUB_OFFLINE) and the file is not cached; {}",
                            fetch_hint(revision, path)),
                {.source = where});
  }
  const HubFileInfo& info = *resolved;
  if (max_bytes && info.size > *max_bytes)
    throw Error(ErrorCode::limit_exceeded,
                limit_message("file size", info.size, "max_header_bytes", *max_bytes) +
                    "; refused before downloading it",
                {.source = where});
  cache_.write_ref(revision, info.commit);
  if (auto file = cache_.cached(info.commit, path)) return checked(*file);
  const bool downloaded_before = cache_.has_blob(info.etag, info.size);
  std::optional<std::string> sha256;
  if (remote_->integrity_checks && is_sha256(info.etag)) sha256 = info.etag;
  const HttpTarget target = make_http_target(url(info.commit, path), auth_headers());
  try {
    // The file as its host (the CDN after the Hub's redirect) states it: Range support and
    // ETag, for the probe's reads and the download.
    const HttpObjectInfo object = http_stat(*remote_->http, target);
    const auto progress = download_progress(*remote_, where, info.size);
    const std::filesystem::path file = cache_.store(
        info.commit, path, info.etag, info.size, sha256,
        [&](uint64_t from, const ByteSink& sink) {
          probe_and_download(*remote_, target, object, probe, from, sink, progress);
        },
        progress);
    return downloaded_before ? checked(file) : file;  // another revision's blob is checked
  } catch (Error& e) {
    e.with_source(where);
    throw;
  }
}

std::vector<std::byte> HubClient::read_small(const std::string& revision, const std::string& path,
                                             uint64_t max_bytes) const {
  if (remote_->caching || settings_.offline) {
    return read_small_file(download(revision, path, max_bytes), max_bytes, describe(revision, path),
                           remote_->os);
  }
  return http_get_small(*remote_->http, make_http_target(url(revision, path), auth_headers()),
                        max_bytes);
}

std::shared_ptr<ByteSource> HubClient::open_ranged(const std::string& revision,
                                                   const std::string& path) const {
  return open_http_source(remote_->http, make_http_target(url(revision, path), auth_headers()),
                          remote_->reads);
}

ShardInput HubClient::open_shard(const std::string& revision, const std::string& path,
                                 ReadMode read_mode, ObjectProbe probe) const {
  auto self = shared_from_this();
  const std::string folder =
      path.find('/') == std::string::npos ? std::string() : path.substr(0, path.rfind('/') + 1);
  // Files beside this one (ONNX external data) come from the same repo and revision.
  SiblingOpener siblings = [self, revision, folder, read_mode](std::string_view rel) {
    std::string sibling = folder + confined_relative_path(rel, self->describe(revision, folder));
    return self->open_shard(revision, sibling, read_mode).bytes;
  };
  if (remote_->caching || settings_.offline) {
    auto file = download(revision, path, std::nullopt, probe);
    return ShardInput{open_file_source(file, file_open_options(read_mode, remote_->os)), siblings,
                      file};
  }
  return ShardInput{open_ranged(revision, path), siblings, {}};
}

}  // namespace ballast
