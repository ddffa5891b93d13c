// HubClient: files of one Hugging Face Hub repository. It resolves
// `{endpoint}/{repo}/resolve/{revision}/{path}` with a HEAD that does not follow the redirect
// (as huggingface_hub does: X-Repo-Commit, X-Linked-Etag, X-Linked-Size), then either
// downloads the file into the hub cache (caching on) or reads it by ranges (caching off; the
// Hub's 302 to its CDN is followed, and the token is not sent to the CDN's host). Offline
// (HF_HUB_OFFLINE), files come from the cache only. As in huggingface_hub, a cached file of a
// commit is used without asking the Hub, and a cached file of a branch is used when the Hub
// cannot answer (unreachable, 5xx, 401/403; not a 404), after a single HEAD without retries.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "io/store.hpp"
#include "remote/hub_cache.hpp"
#include "remote/hub_settings.hpp"
#include "remote/object_probe.hpp"
#include "remote/remote_context.hpp"

namespace ballast {

struct HubFileInfo {
  std::string commit;
  std::string etag;  // X-Linked-Etag (the sha256 of an LFS file) or ETag, without quotes
  uint64_t size = 0;
};

class HubClient : public std::enable_shared_from_this<HubClient> {
 public:
  HubClient(std::shared_ptr<const RemoteContext> remote, HubSettings settings, std::string repo);

  const std::string& repo() const { return repo_; }
  bool offline() const { return settings_.offline; }
  const HubSettings& settings() const { return settings_; }
  const RemoteContext& remote() const { return *remote_; }
  const HubRepoCache& cache() const { return cache_; }
  // Authorization with the token, when there is one (never sent past the Hub's origin).
  HttpHeaders auth_headers() const;
  // What to run to download `revision` of the repo (or its file `path`), for "not cached"
  // errors.
  std::string fetch_hint(const std::string& revision, const std::string& path = "") const;
  std::string url(const std::string& revision, const std::string& path) const;
  std::string describe(const std::string& revision, const std::string& path) const;

  // Resolves one file; throws not_found, auth (gated or private without a token) or network.
  HubFileInfo head(const std::string& revision, const std::string& path, bool retries = true) const;
  // Whether the file exists (online: HEAD; offline or answered from the cache: in the cache).
  bool exists(const std::string& revision, const std::string& path) const;
  // The commit a revision names (online: HEAD of `path`, recorded in refs/ when caching;
  // offline or answered from the cache: refs/).
  std::string commit(const std::string& revision, const std::string& path) const;
  // The file in the local cache, downloaded if needed; with integrity checks on, a blob cached
  // before is checked against its name first (hub_blob_check). A file the Hub states to be
  // larger than `max_bytes` is refused (limit_exceeded) before any of it is downloaded; so is
  // one that `probe` (given ranged reads of the file) refuses. Throws integrity when the Hub
  // answers for a commit `revision` from another commit.
  std::filesystem::path download(const std::string& revision, const std::string& path,
                                 std::optional<uint64_t> max_bytes = std::nullopt,
                                 const ObjectProbe& probe = {}) const;
  // The whole bytes of a small file (an index), through the cache when caching is on.
  std::vector<std::byte> read_small(const std::string& revision, const std::string& path,
                                    uint64_t max_bytes) const;
  // Ranged reads of the file straight from the Hub (no cache).
  std::shared_ptr<ByteSource> open_ranged(const std::string& revision,
                                          const std::string& path) const;
  // A shard: cached file (caching on or offline; downloaded after `probe`, when given) or
  // ranged reads (caching off).
  ShardInput open_shard(const std::string& revision, const std::string& path, ReadMode read_mode,
                        ObjectProbe probe = {}) const;

 private:
  // snapshots/<commit>/<path> of the commit `revision` names (itself, or refs/<revision>).
  std::optional<std::filesystem::path> cached(const std::string& revision,
                                              const std::string& path) const;
  // The file's HEAD answer, or nullopt when the cached copy is to be used instead (offline;
  // a cached commit; a cached branch that the Hub cannot answer for).
  std::optional<HubFileInfo> resolve(const std::string& revision, const std::string& path) const;

  std::shared_ptr<const RemoteContext> remote_;
  HubSettings settings_;
  std::string repo_;
  HubRepoCache cache_;
};

}  // namespace ballast
