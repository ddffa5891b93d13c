// ballast cache verify: every blob of the object cache and the Hub cache hashed against the
// digest it is recorded or named by (see ballast/cache.hpp).
#include <sys/stat.h>

#include "ballast/cache.hpp"
#include "ballast/error.hpp"
#include "remote/cache_files.hpp"
#include "remote/hub_blob_check.hpp"
#include "remote/hub_settings.hpp"
#include "remote/object_cache.hpp"
#include "remote/remote_context.hpp"

namespace ballast {
namespace {

namespace fs = std::filesystem;

// The entries of `folder`, none when it cannot be listed (no cache, or no blobs/ yet).
std::vector<FolderEntry> entries_of(const Os& os, const fs::path& folder) {
  try {
    return os.list_folder(folder);
  } catch (const Error&) {
    return {};
  }
}

std::vector<CachedBlobCheck> verify_hub_cache(const std::shared_ptr<const Os>& os,
                                              const fs::path& hub, bool remove_corrupt) {
  std::vector<CachedBlobCheck> checks;
  for (const FolderEntry& repo : entries_of(*os, hub)) {
    const auto repo_status = file_status(*os, repo.path);
    if (!repo_status || !S_ISDIR(repo_status->st_mode) ||
        repo.path.filename().string().find("--") == std::string::npos)
      continue;  // models--org--name, datasets--..., spaces--...
    for (const FolderEntry& item : entries_of(*os, repo.path / "blobs")) {
      const auto st = file_status(*os, item.path);
      if (!st || !S_ISREG(st->st_mode))
        continue;  // .incomplete downloads are regular: names differ
      CachedBlobCheck check{.blob = item.path, .cache = "hub"};
      check.size = static_cast<uint64_t>(st->st_size);
      if (auto digests = hub_blob_digests(os, item.path)) {
        std::tie(check.expected, check.actual) = *digests;
        check.state = check.expected == check.actual ? CachedBlobCheck::State::ok
                                                     : CachedBlobCheck::State::corrupt;
      }
      if (remove_corrupt && check.state == CachedBlobCheck::State::corrupt)
        check.removed = remove_file(*os, item.path);
      checks.push_back(std::move(check));
    }
  }
  return checks;
}

}  // namespace

std::vector<CachedBlobCheck> verify_caches(const CacheVerifyOptions& options) {
  const fs::path cache_dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  const fs::path hub = options.hub_cache.empty() ? hub_cache_dir_from_env() : options.hub_cache;
  // The public entry has no Os of its own: the real one makes its calls.
  const std::shared_ptr<const Os>& os = real_os();
  std::vector<CachedBlobCheck> checks =
      ObjectCache(cache_dir, 0, os).verify(options.remove_corrupt);
  for (auto& check : verify_hub_cache(os, hub, options.remove_corrupt))
    checks.push_back(std::move(check));
  return checks;
}

}  // namespace ballast
