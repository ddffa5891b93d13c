// The URL / S3 object cache (see object_cache.hpp).
#include "remote/object_cache.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "remote/cache_files.hpp"
#include "remote/sha256.hpp"
#include "util/json_text.hpp"

namespace ballast {
namespace {

namespace fs = std::filesystem;

// The largest record file read back; anything bigger is not one of ours.
constexpr uintmax_t kMaxRecordBytes = 64 * 1024;

struct Paths {
  fs::path blob, record, lock;

  fs::path partial() const { return incomplete_path(blob); }
  // The version of the object the partial download holds the start of.
  fs::path partial_record() const {
    return blob.parent_path() / (blob.stem().string() + ".incomplete.json");
  }
};

// The files of the object whose files are named `<folder>/<name>.*`.
Paths paths_named(const fs::path& folder, const std::string& name) {
  return {folder / (name + ".blob"), folder / (name + ".json"), folder / (name + ".lock")};
}

Paths paths_for(const fs::path& folder, const std::string& key) {
  Sha256 hash;
  hash.update(std::as_bytes(std::span(key)));
  return paths_named(folder, hash.hex());
}

struct Record {
  std::string etag;
  uint64_t size = 0;
  std::string sha256;         // of the blob as downloaded; empty in records of older versions
  int64_t blob_mtime_ns = 0;  // the blob's modification time once complete; 0 when unknown
};

using OsPtr = std::shared_ptr<const Os>;

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

int64_t mtime_ns(const Os& os, const fs::path& path) {
  const auto st = file_status(os, path);
  return st ? mtime_ns(*st) : -1;
}

std::string sha256_of_file(const OsPtr& os, const fs::path& path) {
  Sha256 hash;
  hash.update(*open_file_source(path, {.allow_mmap = false, .os = os}));
  return hash.hex();
}

void write_record(const OsPtr& os, const fs::path& path, const std::string& source,
                  const Record& r) {
  write_atomically(os, path,
                   lossy_json_text(nlohmann::json{{"source", source},  // a server's bytes
                                                  {"etag", r.etag},
                                                  {"size", r.size},
                                                  {"sha256", r.sha256},
                                                  {"blob_mtime_ns", r.blob_mtime_ns}}));
}

std::optional<Record> read_record(const OsPtr& os, const fs::path& path) {
  std::optional<std::string> text;
  try {
    text = read_small_text_file(path, kMaxRecordBytes, os);
  } catch (const Error&) {
    return std::nullopt;  // an unreadable record makes the blob unusable, not the load
  }
  if (!text) return std::nullopt;
  auto json = nlohmann::json::parse(*text, nullptr, false);
  if (!json.is_object() || !json.contains("etag") || !json["etag"].is_string() ||
      !json.contains("size") || !json["size"].is_number_unsigned())
    return std::nullopt;
  Record r{json["etag"].get<std::string>(), json["size"].get<uint64_t>()};
  if (json.contains("sha256") && json["sha256"].is_string()) r.sha256 = json["sha256"];
  if (json.contains("blob_mtime_ns") && json["blob_mtime_ns"].is_number_integer())
    r.blob_mtime_ns = json["blob_mtime_ns"];
  return r;
}

// Marks the record as just used (its mtime orders eviction).
void touch(const Os& os, const fs::path& record) { os.utimens(record.c_str(), nullptr); }

// The blob is the one the record describes. The cheap check, on every use: its size, and its
// modification time as recorded when the download completed. A blob written since (its mtime
// moved) is hashed again and used only if its bytes are still the downloaded ones. Bytes that
// rot without a write are found by `ballast cache verify`, which hashes every blob.
bool blob_matches(const OsPtr& os, const Paths& p, uint64_t size,
                  const std::optional<std::string>& etag) {
  const auto blob = file_status(*os, p.blob);
  if (!blob || !S_ISREG(blob->st_mode) || static_cast<uint64_t>(blob->st_size) != size)
    return false;
  auto record = read_record(os, p.record);
  if (!record || record->size != size || (etag && record->etag != *etag)) return false;
  if (record->sha256.empty() || mtime_ns(*blob) == record->blob_mtime_ns) return true;
  return sha256_of_file(os, p.blob) == record->sha256;
}

// What identifies the version of an object, for resuming its download: its size and validators.
// Only a strong ETag or a Last-Modified can tell two versions of one size apart; without
// either, a download is never resumed.
nlohmann::json version_of(const std::string& source, const HttpObjectInfo& info) {
  std::string etag = info.etag.starts_with("W/") ? std::string() : info.etag;
  const auto modified = info.headers.find("last-modified");
  std::string last_modified = modified == info.headers.end() ? std::string() : modified->second;
  if (etag.empty() && last_modified.empty()) return nullptr;
  return {{"source", source},
          {"etag", std::move(etag)},
          {"last_modified", std::move(last_modified)},
          {"size", info.size}};
}

// The partial download's record (written by ballast: one of its own files) when it holds the
// start of the object in `version` (the source aside); null otherwise.
nlohmann::json partial_record_of(const OsPtr& os, const Paths& p, const nlohmann::json& version) {
  const auto text = read_own_small_file(os, p.partial_record(), kMaxRecordBytes);
  auto recorded = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  if (!recorded.is_object()) return nullptr;
  for (const char* field : {"etag", "last_modified", "size"})
    if (!recorded.contains(field) || recorded[field] != version[field]) return nullptr;
  return recorded;
}

// The checkpoint a partial download's record holds: how many of its bytes are proven, and
// their sha256.
std::optional<PartialCheckpoint> checkpoint_of(const nlohmann::json& record) {
  if (!record.is_object() || !record.contains("length") || !record["length"].is_number_unsigned() ||
      !record.contains("sha256") || !record["sha256"].is_string())
    return std::nullopt;
  return PartialCheckpoint{record["length"].get<uint64_t>(), record["sha256"].get<std::string>()};
}

// Removes a partial download and its version record.
void remove_partial(const Os& os, const Paths& p) {
  remove_file(os, p.partial());
  remove_file(os, p.partial_record());
}

// Downloads the object into its blob under the object's exclusive lock, continuing a partial
// download of the same version after the bytes its record's checkpoint proves; returns the
// blob's sha256.
std::string download_blob(const OsPtr& os, const Paths& p, const std::string& source,
                          const HttpObjectInfo& info, const RangeFetch& fetch,
                          const std::function<void(uint64_t)>& progress) {
  const nlohmann::json version = version_of(source, info);
  const bool resumable = !version.is_null();
  const nlohmann::json recorded = resumable ? partial_record_of(os, p, version) : nullptr;
  if (recorded.is_null()) {
    remove_partial(*os,
                   p);  // another version's bytes (or an unidentified one's) are never continued
    if (resumable) write_atomically(os, p.partial_record(), lossy_json_text(version));
  }
  const ResumeProof proof{.recorded = [&] { return checkpoint_of(recorded); },
                          .record =
                              [&](const PartialCheckpoint& checkpoint) {
                                nlohmann::json record = version;
                                record["length"] = checkpoint.length;
                                record["sha256"] = checkpoint.sha256;
                                write_atomically(os, p.partial_record(), lossy_json_text(record));
                              }};
  try {
    std::string sha256 = download_into(os, p.blob, info.size, std::nullopt, source, fetch, progress,
                                       resumable ? &proof : nullptr);
    remove_partial(*os, p);
    return sha256;
  } catch (...) {
    if (!file_status(*os, p.partial(), /*follow=*/false))
      remove_partial(*os, p);  // no bytes kept: no version either
    throw;
  }
}

// A shared lock on the object's lock file, held by the returned lease.
CacheLease lease_of(const OsPtr& os, const Paths& p) {
  std::shared_ptr<Fd> lock = lock_file(os, p.lock, /*exclusive=*/false);
  return lock;
}

}  // namespace

ObjectCache::ObjectCache(fs::path cache_dir, uint64_t max_bytes, std::shared_ptr<const Os> os)
    : folder_(std::move(cache_dir) / "objects"), max_bytes_(max_bytes), os_(std::move(os)) {}

CachedObject ObjectCache::fetch(const std::string& key, const std::string& source,
                                const HttpObjectInfo& info, const RangeFetch& fetch_bytes,
                                const std::function<void(uint64_t)>& progress) const {
  make_folders(*os_, folder_);
  const Paths p = paths_for(folder_, key);
  {
    auto lock = lock_file(os_, p.lock, /*exclusive=*/true);
    if (!blob_matches(os_, p, info.size, info.etag)) {
      remove_file(*os_, p.record);  // the record goes first: a blob without one is never used
      Record record{info.etag, info.size};
      record.sha256 = download_blob(os_, p, source, info, fetch_bytes, progress);
      record.blob_mtime_ns = mtime_ns(*os_, p.blob);
      write_record(os_, p.record, source, record);
    }
    touch(*os_, p.record);
  }
  CachedObject object{p.blob, lease_of(os_, p)};
  evict_to_fit();
  return object;
}

std::optional<CachedObject> ObjectCache::cached(const std::string& key) const {
  const Paths p = paths_for(folder_, key);
  if (!file_status(*os_, p.record)) return std::nullopt;
  auto lease = lease_of(os_, p);
  auto record = read_record(os_, p.record);
  if (!record || !blob_matches(os_, p, record->size, std::nullopt)) return std::nullopt;
  touch(*os_, p.record);
  return CachedObject{p.blob, std::move(lease)};
}

std::optional<CachedObject> ObjectCache::cached(const std::string& key,
                                                const HttpObjectInfo& info) const {
  const Paths p = paths_for(folder_, key);
  if (!file_status(*os_, p.record)) return std::nullopt;
  auto lease = lease_of(os_, p);
  if (!blob_matches(os_, p, info.size, info.etag)) return std::nullopt;
  touch(*os_, p.record);
  return CachedObject{p.blob, std::move(lease)};
}

void ObjectCache::evict_to_fit() const {
  if (max_bytes_ == 0) return;
  struct Entry {
    int64_t used;  // mtime in ns
    uint64_t size;
    Paths paths;
    bool partial;  // a partial download (its own last write is its last use)
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::vector<FolderEntry> listing;
  try {
    listing = os_->list_folder(folder_);
  } catch (const Error&) {
    return;  // no folder: nothing to evict
  }
  for (const FolderEntry& item : listing) {
    const fs::path& path = item.path;
    const bool partial = path.extension() == ".incomplete";
    if (path.extension() != ".blob" && !partial) continue;
    // <name>.blob or <name>.blob.incomplete
    const std::string name = (partial ? path.stem().stem() : path.stem()).string();
    Paths p = paths_named(folder_, name);
    const auto st = file_status(*os_, path);
    if (!st) continue;
    const int64_t used = mtime_ns(*os_, partial ? path : p.record);
    entries.push_back({used, static_cast<uint64_t>(st->st_size), std::move(p), partial});
    total += static_cast<uint64_t>(st->st_size);
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    auto lock = lock_file(os_, e.paths.lock, /*exclusive=*/true, /*try_only=*/true);
    if (!lock) continue;  // in use (or being downloaded)
    const fs::path& stamp = e.partial ? e.paths.partial() : e.paths.record;
    const int64_t used = mtime_ns(*os_, stamp);
    if (used != e.used && used != -1) continue;  // used meanwhile
    if (e.partial) {
      remove_partial(*os_, e.paths);
    } else {
      remove_file(*os_, e.paths.record);
      remove_file(*os_, e.paths.blob);
    }
    total -= e.size;
  }
}

std::vector<CachedBlobCheck> ObjectCache::verify(bool remove_corrupt) const {
  std::vector<CachedBlobCheck> checks;
  std::vector<FolderEntry> listing;
  try {
    listing = os_->list_folder(folder_);
  } catch (const Error&) {
    return checks;  // no cache yet
  }
  for (const FolderEntry& item : listing) {
    if (item.path.extension() != ".blob") continue;
    const fs::path stem = item.path.parent_path() / item.path.stem();
    const Paths p{item.path, stem.string() + ".json", stem.string() + ".lock"};
    CachedBlobCheck check{.blob = p.blob, .cache = "objects"};
    auto lock = lock_file(os_, p.lock, /*exclusive=*/remove_corrupt);
    const auto st = file_status(*os_, p.blob);
    check.size = st ? static_cast<uint64_t>(st->st_size) : static_cast<uint64_t>(-1);
    const auto record = read_record(os_, p.record);
    if (record && !record->sha256.empty()) {
      check.expected = "sha256:" + record->sha256;
      check.actual = "sha256:" + sha256_of_file(os_, p.blob);
      check.state = check.actual == check.expected ? CachedBlobCheck::State::ok
                                                   : CachedBlobCheck::State::corrupt;
    }
    if (remove_corrupt && check.state == CachedBlobCheck::State::corrupt) {
      remove_file(*os_, p.record);  // the record first: a blob without one is never used
      check.removed = remove_file(*os_, p.blob);
    }
    checks.push_back(std::move(check));
  }
  return checks;
}

}  // namespace ballast
