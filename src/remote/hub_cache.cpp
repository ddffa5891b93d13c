// The Hub cache layout, locking and atomic commits (see hub_cache.hpp).
#include "remote/hub_cache.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "remote/cache_files.hpp"
#include "remote/url.hpp"

namespace ballast {
namespace fs = std::filesystem;

constexpr uint64_t kMaxRefBytes = 4096;  // a ref holds one 40-character commit hash

bool is_commit_hash(std::string_view revision) {
  if (revision.size() != 40) return false;
  for (char c : revision)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

HubRepoCache::HubRepoCache(const fs::path& cache_dir, std::string_view repo_id) {
  std::string folder = "models--";
  for (char c : repo_id) folder += c == '/' ? std::string("--") : std::string(1, c);
  root_ = cache_dir / folder;
}

std::optional<std::string> HubRepoCache::commit_of(const std::string& revision) const {
  if (is_commit_hash(revision)) return revision;
  const auto text = read_small_text_file(
      root_ / "refs" / confined_relative_path(revision, root_.string()), kMaxRefBytes);
  if (!text) return std::nullopt;
  const std::string commit = text->substr(0, text->find('\n'));
  if (!is_commit_hash(commit)) return std::nullopt;
  return commit;
}

std::optional<fs::path> HubRepoCache::cached(const std::string& commit,
                                             const std::string& path) const {
  fs::path p = root_ / "snapshots" / commit / path;
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) return p;  // follows the symlink: the blob must exist
  return std::nullopt;
}

bool HubRepoCache::has_blob(const std::string& etag, uint64_t size) const {
  const fs::path blob = root_ / "blobs" / etag;
  std::error_code ec;
  return fs::is_regular_file(blob, ec) && fs::file_size(blob, ec) == size && !ec;
}

void HubRepoCache::write_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return;
  // A branch may hold slashes ("refs/pr/1") but never leave refs/ ("../../x").
  const fs::path ref = root_ / "refs" / confined_relative_path(revision, root_.string());
  if (commit_of(revision) == commit) return;  // unchanged: a read-only cache stays usable
  // As huggingface_hub does, the commit's snapshot folder exists before a ref names it
  // (scan_cache_dir reports a ref to a missing snapshot as a corrupted repo).
  fs::create_directories(root_ / "snapshots" / commit);
  write_atomically(ref, commit);
}

void HubRepoCache::link(const std::string& commit, const std::string& path,
                        const std::string& etag) const {
  const fs::path link_path = root_ / "snapshots" / commit / path;
  fs::create_directories(link_path.parent_path());
  // From snapshots/<commit>/<dirs...>/ up to the repo folder, then into blobs/.
  fs::path target = "..";
  target /= "..";
  for (size_t slashes = std::count(path.begin(), path.end(), '/'); slashes > 0; --slashes)
    target /= "..";
  target = target / "blobs" / etag;
  const fs::path temp = temporary_path_beside(link_path);
  fs::create_symlink(target, temp);
  fs::rename(temp, link_path);
}

void HubRepoCache::tag_cache_folder() const {
  // huggingface_hub's tag, byte for byte (https://bford.info/cachedir/): backups skip the cache.
  const fs::path tag = root_.parent_path() / "CACHEDIR.TAG";
  std::error_code ec;
  if (fs::exists(tag, ec)) return;
  write_atomically(tag,
                   "Signature: 8a477f597d28d172789f06886806bc55\n"
                   "# This file is a cache directory tag created by huggingface_hub.\n"
                   "# For information about cache directory tags, see:\n"
                   "#\thttps://bford.info/cachedir/\n");
}

std::pair<fs::path, std::unique_ptr<Fd>> HubRepoCache::lock_blob(const std::string& etag) const {
  const fs::path blobs = root_ / "blobs";
  fs::create_directories(blobs);
  tag_cache_folder();
  // huggingface_hub keeps its locks in <cache>/.locks/models--org--name/<etag>.lock.
  const fs::path locks = root_.parent_path() / ".locks" / root_.filename();
  fs::create_directories(locks);
  return {blobs / etag, lock_file(locks / (etag + ".lock"), /*exclusive=*/true)};
}

void HubRepoCache::begin_partial(const std::string& etag, std::span<const std::byte> prefix) const {
  if (prefix.empty()) return;
  auto [blob, lock] = lock_blob(etag);
  ballast::begin_partial(blob, prefix);
}

namespace {

// huggingface_hub (2.4) downloads into blobs/<etag>.<8 hex digits>.incomplete, a name of its
// own per download, and leaves that file behind when its process is killed. Under the blob's
// lock no download of it is running (huggingface_hub takes the same lock), so the longest of
// those files and <etag>.incomplete becomes <etag>.incomplete, for this download to continue,
// and the others are removed.
void adopt_partials(const fs::path& blob) {
  const fs::path ours = incomplete_path(blob);
  const std::string prefix = blob.filename().string() + ".";
  std::vector<fs::path> partials;
  std::error_code ec;
  if (fs::symlink_status(ours, ec).type() == fs::file_type::regular) partials.push_back(ours);
  for (const auto& item : fs::directory_iterator(blob.parent_path(), ec)) {
    const std::string name = item.path().filename().string();
    const std::string middle = name.substr(std::min(name.size(), prefix.size()));
    if (!name.starts_with(prefix) || middle.size() != 8 + std::string(".incomplete").size() ||
        !middle.ends_with(".incomplete") || middle.find_first_not_of("0123456789abcdef") != 8 ||
        item.symlink_status(ec).type() != fs::file_type::regular)
      continue;
    partials.push_back(item.path());
  }
  if (partials.empty() || (partials.size() == 1 && partials[0] == ours)) return;
  auto size_of = [&](const fs::path& p) { return fs::file_size(p, ec); };
  const fs::path longest = *std::max_element(
      partials.begin(), partials.end(),
      [&](const fs::path& a, const fs::path& b) { return size_of(a) < size_of(b); });
  for (const fs::path& p : partials)
    if (p != longest) fs::remove(p, ec);
  if (longest != ours) fs::rename(longest, ours, ec);
}

}  // namespace

fs::path HubRepoCache::store(const std::string& commit, const std::string& path,
                             const std::string& etag, uint64_t size,
                             const std::optional<std::string>& sha256, const RangeFetch& fetch,
                             const std::function<void(uint64_t)>& progress) const {
  auto [blob, lock] = lock_blob(etag);
  std::error_code ec;
  if (!fs::is_regular_file(blob, ec) || fs::file_size(blob, ec) != size) {
    adopt_partials(blob);
    download_into(blob, size, sha256, path, fetch, progress, /*resume=*/true);
  }
  link(commit, path, etag);
  return root_ / "snapshots" / commit / path;
}

}  // namespace ballast
