// The Hub cache layout, locking and atomic commits (see hub_cache.hpp).
#include "remote/hub_cache.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "io/folder_opener.hpp"
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

HubRepoCache::HubRepoCache(const fs::path& cache_dir, std::string_view repo_id,
                           std::shared_ptr<const Os> os)
    : os_(std::move(os)) {
  std::string folder = "models--";
  for (char c : repo_id) folder += c == '/' ? std::string("--") : std::string(1, c);
  root_ = cache_dir / folder;
}

std::optional<std::string> HubRepoCache::commit_of(const std::string& revision) const {
  if (is_commit_hash(revision)) return revision;
  const auto text = read_small_text_file(
      root_ / "refs" / confined_relative_path(revision, root_.string()), kMaxRefBytes, os_);
  if (!text) return std::nullopt;
  const std::string commit = text->substr(0, text->find('\n'));
  if (!is_commit_hash(commit)) return std::nullopt;
  return commit;
}

std::optional<fs::path> HubRepoCache::cached(const std::string& commit,
                                             const std::string& path) const {
  const fs::path snapshot = root_ / "snapshots" / commit;
  fs::path p = snapshot / path;
  const auto st = file_status(*os_, p);  // follows the symlink: the blob must exist
  if (!st || !S_ISREG(st->st_mode)) return std::nullopt;
  // The rule a snapshot opened as a local folder follows: a name resolves inside the snapshot
  // or its repo's blobs/, anywhere else is refused (invalid_format).
  resolve_inside(snapshot, path, *os_);
  return p;
}

bool HubRepoCache::has_blob(const std::string& etag, uint64_t size) const {
  const auto st = file_status(*os_, root_ / "blobs" / etag);
  return st && S_ISREG(st->st_mode) && static_cast<uint64_t>(st->st_size) == size;
}

void HubRepoCache::write_ref(const std::string& revision, const std::string& commit) const {
  if (is_commit_hash(revision)) return;  // a commit names itself: no ref is named after one
  // A branch may hold slashes ("refs/pr/1") but never leave refs/ ("../../x").
  const fs::path ref = root_ / "refs" / confined_relative_path(revision, root_.string());
  if (commit_of(revision) == commit) return;  // unchanged: a read-only cache stays usable
  // As huggingface_hub does, the commit's snapshot folder exists before a ref names it
  // (scan_cache_dir reports a ref to a missing snapshot as a corrupted repo).
  make_folders(*os_, root_ / "snapshots" / commit);
  write_atomically(os_, ref, commit);
}

void HubRepoCache::link(const std::string& commit, const std::string& path,
                        const std::string& etag) const {
  const fs::path link_path = root_ / "snapshots" / commit / path;
  make_folders(*os_, link_path.parent_path());
  // From snapshots/<commit>/<dirs...>/ up to the repo folder, then into blobs/.
  fs::path target = "..";
  target /= "..";
  for (size_t slashes = std::count(path.begin(), path.end(), '/'); slashes > 0; --slashes)
    target /= "..";
  target = target / "blobs" / etag;
  const fs::path temp = temporary_path_beside(link_path);
  if (os_->symlink(target.c_str(), temp.c_str()) != 0)
    throw Error(ErrorCode::io,
                fmt::format("cannot link to {}: {}", target.string(), std::strerror(errno)),
                {.source = temp.string()});
  try {
    rename_file(*os_, temp, link_path);
  } catch (...) {
    remove_file(*os_, temp);
    throw;
  }
}

void HubRepoCache::tag_cache_folder() const {
  // huggingface_hub's tag, byte for byte (https://bford.info/cachedir/): backups skip the cache.
  const fs::path tag = root_.parent_path() / "CACHEDIR.TAG";
  if (file_status(*os_, tag)) return;
  write_atomically(os_, tag,
                   "Signature: 8a477f597d28d172789f06886806bc55\n"
                   "# This file is a cache directory tag created by huggingface_hub.\n"
                   "# For information about cache directory tags, see:\n"
                   "#\thttps://bford.info/cachedir/\n");
}

std::pair<fs::path, std::unique_ptr<Fd>> HubRepoCache::lock_blob(const std::string& etag) const {
  const fs::path blobs = root_ / "blobs";
  make_folders(*os_, blobs);
  tag_cache_folder();
  // huggingface_hub keeps its locks in <cache>/.locks/models--org--name/<etag>.lock.
  const fs::path locks = root_.parent_path() / ".locks" / root_.filename();
  make_folders(*os_, locks);
  return {blobs / etag, lock_file(os_, locks / (etag + ".lock"), /*exclusive=*/true)};
}

void HubRepoCache::begin_partial(const std::string& etag, std::span<const std::byte> prefix) const {
  if (prefix.empty()) return;
  auto [blob, lock] = lock_blob(etag);
  ballast::begin_partial(os_, blob, prefix);
}

namespace {

// huggingface_hub (2.4) downloads into blobs/<etag>.<8 hex digits>.incomplete, a name of its
// own per download, and leaves that file behind when its process is killed. Under the blob's
// lock no download of it is running (huggingface_hub takes the same lock), so the longest of
// those files and <etag>.incomplete becomes <etag>.incomplete, for this download to continue,
// and the others are removed.
void adopt_partials(const Os& os, const fs::path& blob) {
  const fs::path ours = incomplete_path(blob);
  const std::string prefix = blob.filename().string() + ".";
  // One of the user's own files (never a symlink or a hard link) at `path`: its size, else
  // nullopt (and anything else at a partial's name is removed, never continued).
  auto regular_size = [&](const fs::path& path) -> std::optional<uint64_t> {
    const auto st = file_status(os, path, /*follow=*/false);
    if (!st) return std::nullopt;
    if (!is_own_file(*st)) {
      remove_file(os, path);
      return std::nullopt;
    }
    return static_cast<uint64_t>(st->st_size);
  };
  std::vector<std::pair<fs::path, uint64_t>> partials;
  if (auto size = regular_size(ours)) partials.emplace_back(ours, *size);
  std::vector<FolderEntry> listing;
  try {
    listing = os.list_folder(blob.parent_path());
  } catch (const Error&) {
    // no listing: only our own partial download, if any
  }
  for (const FolderEntry& item : listing) {
    const std::string name = item.path.filename().string();
    const std::string middle = name.substr(std::min(name.size(), prefix.size()));
    if (!name.starts_with(prefix) || middle.size() != 8 + std::string(".incomplete").size() ||
        !middle.ends_with(".incomplete") || middle.find_first_not_of("0123456789abcdef") != 8)
      continue;
    if (auto size = regular_size(item.path)) partials.emplace_back(item.path, *size);
  }
  if (partials.empty() || (partials.size() == 1 && partials[0].first == ours)) return;
  const fs::path longest =
      std::max_element(partials.begin(), partials.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      })->first;
  for (const auto& partial : partials)
    if (partial.first != longest) remove_file(os, partial.first);
  if (longest != ours) os.rename(longest.c_str(), ours.c_str());
}

}  // namespace

fs::path HubRepoCache::store(const std::string& commit, const std::string& path,
                             const std::string& etag, uint64_t size,
                             const std::optional<std::string>& sha256, const RangeFetch& fetch,
                             const std::function<void(uint64_t)>& progress) const {
  auto [blob, lock] = lock_blob(etag);
  const auto st = file_status(*os_, blob);
  if (!st || !S_ISREG(st->st_mode) || static_cast<uint64_t>(st->st_size) != size) {
    adopt_partials(*os_, blob);
    // A partial download is continued only when its name is the sha256 its whole must have.
    const ResumeProof proven_by_sha256;
    download_into(os_, blob, size, sha256, path, fetch, progress, &proven_by_sha256);
  }
  link(commit, path, etag);
  return root_ / "snapshots" / commit / path;
}

}  // namespace ballast
