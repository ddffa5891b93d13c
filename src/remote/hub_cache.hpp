// The Hugging Face Hub cache, byte for byte in huggingface_hub's layout, so either tool reuses
// the other's downloads:
//
//   <cache>/models--org--name/blobs/<etag>                 file contents
//   <cache>/models--org--name/snapshots/<commit>/<path>    relative symlink to the blob
//   <cache>/models--org--name/refs/<revision>              the commit a branch or tag names
//   <cache>/CACHEDIR.TAG                                   huggingface_hub's cache tag
//
// A blob is written as `<etag>.incomplete`, checked (size, and sha256 when the etag is one),
// then renamed into place, under an exclusive flock on
// `<cache>/.locks/models--org--name/<etag>.lock`: two processes never
// download the same blob twice, and nobody ever sees a half-written one. An `<etag>.incomplete`
// left by an interrupted download is continued when the etag is the sha256 the whole must have
// (checked at the end: a whole that fails it is downloaded again from zero), and so is the
// longest `<etag>.<8 hex>.incomplete` that huggingface_hub 2.4 leaves when its process is
// killed; only the user's own files are continued (a hard link or another user's file planted
// at those names is removed, never written through).
// Every file call goes through the cache's Os (the loader's).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "remote/cache_files.hpp"

namespace ballast {

class HubRepoCache {
 public:
  HubRepoCache(const std::filesystem::path& cache_dir, std::string_view repo_id,
               std::shared_ptr<const Os> os);

  const std::filesystem::path& root() const { return root_; }
  // The Os that makes the cache's file calls.
  const std::shared_ptr<const Os>& os() const { return os_; }
  // The commit `revision` names: itself when it is a commit hash, else refs/<revision>. A
  // revision that would leave refs/ ("../x", "/x") is Error(invalid_format), here and below.
  std::optional<std::string> commit_of(const std::string& revision) const;
  // snapshots/<commit>/<path> when it is there. A symlink there that resolves outside the
  // snapshot and its repo's blobs/ is Error(invalid_format), as in a snapshot opened as a folder.
  std::optional<std::filesystem::path> cached(const std::string& commit,
                                              const std::string& path) const;
  // Whether blobs/<etag> holds a file of this size (another revision's, maybe).
  bool has_blob(const std::string& etag, uint64_t size) const;
  // Records refs/<revision> = commit (not for a revision that is a commit hash, nor when it is
  // recorded already), creating snapshots/<commit>/ first.
  void write_ref(const std::string& revision, const std::string& commit) const;

  // Makes sure blobs/<etag> holds the file (downloading it with `fetch` unless present) and
  // that snapshots/<commit>/<path> links to it; returns the snapshot path. `fetch` streams
  // the file from the offset it is given (after the bytes of a partial download, continued
  // only when `sha256` is given) to its end; `sha256` (lowercase hex), when given, must match:
  // a continued download that does not is downloaded again from zero, a new one is deleted and
  // Error(integrity) thrown. `progress` hears the bytes in the blob so far.
  std::filesystem::path store(const std::string& commit, const std::string& path,
                              const std::string& etag, uint64_t size,
                              const std::optional<std::string>& sha256, const RangeFetch& fetch,
                              const std::function<void(uint64_t)>& progress = {}) const;

  // Starts blobs/<etag>.incomplete with `prefix`, the file's first bytes read already (its
  // header), unless the blob or a partial download of it is there: store() continues after them.
  void begin_partial(const std::string& etag, std::span<const std::byte> prefix) const;

 private:
  // Creates blobs/ and huggingface_hub's lock folder; returns the blob's path and takes its lock.
  std::pair<std::filesystem::path, std::unique_ptr<Fd>> lock_blob(const std::string& etag) const;
  void tag_cache_folder() const;
  void link(const std::string& commit, const std::string& path, const std::string& etag) const;

  std::filesystem::path root_;
  std::shared_ptr<const Os> os_;
};

// True for a 40-character lowercase hex string (a git commit).
bool is_commit_hash(std::string_view revision);

}  // namespace ballast
