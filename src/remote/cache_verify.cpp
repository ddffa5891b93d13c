// ballast cache verify: every blob of the object cache and the Hub cache hashed against the
// digest it is recorded or named by (see ballast/cache.hpp).
#include <fmt/format.h>
#include <algorithm>

#include "ballast/cache.hpp"
#include "io/file_source.hpp"
#include "remote/hub_settings.hpp"
#include "remote/object_cache.hpp"
#include "remote/remote_context.hpp"
#include "remote/sha256.hpp"

namespace ballast {
namespace {

namespace fs = std::filesystem;

bool is_lowercase_hex(const std::string& s, size_t length) {
  return s.size() == length && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isxdigit(c) && !std::isupper(c);
         });
}

// The digest a Hub blob is named by, computed over its bytes: sha256 for LFS files, the git
// object id (sha1 of "blob <size>\0" and the bytes) for the others; nullopt for other names.
std::optional<std::pair<std::string, std::string>> hub_digests(const fs::path& blob) {
  const std::string name = blob.filename().string();
  const bool lfs = is_lowercase_hex(name, 64);
  if (!lfs && !is_lowercase_hex(name, 40)) return std::nullopt;
  auto file = open_file_source(blob, {.allow_mmap = false});
  Sha256 sha256;
  Sha1 sha1;
  EvpDigest& digest = lfs ? static_cast<EvpDigest&>(sha256) : sha1;
  if (!lfs) {
    const std::string header = fmt::format("blob {}", file->size()) + std::string(1, '\0');
    digest.update(std::as_bytes(std::span(header)));
  }
  digest.update(*file);
  const std::string kind = lfs ? "sha256:" : "git-sha1:";
  return std::pair{kind + name, kind + digest.hex()};
}

std::vector<CachedBlobCheck> verify_hub_cache(const fs::path& hub, bool remove_corrupt) {
  std::vector<CachedBlobCheck> checks;
  std::error_code ec;
  for (const auto& repo : fs::directory_iterator(hub, ec)) {
    if (!repo.is_directory(ec) || repo.path().filename().string().find("--") == std::string::npos)
      continue;  // models--org--name, datasets--..., spaces--...
    for (const auto& item : fs::directory_iterator(repo.path() / "blobs", ec)) {
      if (!item.is_regular_file(ec)) continue;  // .incomplete downloads are regular: names differ
      CachedBlobCheck check{.blob = item.path(), .cache = "hub"};
      check.size = item.file_size(ec);
      if (auto digests = hub_digests(item.path())) {
        std::tie(check.expected, check.actual) = *digests;
        check.state = check.expected == check.actual ? CachedBlobCheck::State::ok
                                                     : CachedBlobCheck::State::corrupt;
      }
      if (remove_corrupt && check.state == CachedBlobCheck::State::corrupt)
        check.removed = fs::remove(item.path(), ec);
      checks.push_back(std::move(check));
    }
  }
  return checks;
}

}  // namespace

std::vector<CachedBlobCheck> verify_caches(const CacheVerifyOptions& options) {
  const fs::path cache_dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  const fs::path hub =
      options.hub_cache.empty() ? hub_settings_from_env(std::nullopt).cache_dir : options.hub_cache;
  std::vector<CachedBlobCheck> checks = ObjectCache(cache_dir, 0).verify(options.remove_corrupt);
  for (auto& check : verify_hub_cache(hub, options.remove_corrupt))
    checks.push_back(std::move(check));
  return checks;
}

}  // namespace ballast
