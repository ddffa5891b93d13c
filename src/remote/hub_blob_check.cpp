// Hub blobs checked against their names (see hub_blob_check.hpp).
#include "remote/hub_blob_check.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "remote/sha256.hpp"

namespace ballast {
namespace {

namespace fs = std::filesystem;

bool is_lowercase_hex(const std::string& s, size_t length) {
  return s.size() == length && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) &&
                  !std::isupper(static_cast<unsigned char>(c));
         });
}

// A file as it was when it was hashed: device, inode, size, modification and change times.
using FileVersion = std::tuple<dev_t, ino_t, off_t, int64_t, int64_t>;

FileVersion version_of(const struct stat& st) {
  auto ns = [](const timespec& t) {
    return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  };
  return {st.st_dev, st.st_ino, st.st_size, ns(st.st_mtim), ns(st.st_ctim)};
}

// The blobs this process has found to match their names.
std::mutex verified_mutex;
std::set<FileVersion> verified;

}  // namespace

std::optional<std::pair<std::string, std::string>> hub_blob_digests(
    const std::shared_ptr<const Os>& os, const fs::path& blob) {
  const std::string name = blob.filename().string();
  const bool lfs = is_lowercase_hex(name, 64);
  if (!lfs && !is_lowercase_hex(name, 40)) return std::nullopt;
  auto file = open_file_source(blob, {.allow_mmap = false, .os = os});
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

void check_cached_hub_blob(const std::shared_ptr<const Os>& os, const fs::path& file,
                           const std::string& source) {
  const auto blob = os->canonical(file);
  struct stat st {};
  if (!blob || os->stat(blob->c_str(), &st) != 0) return;  // gone: opening it will say so
  const FileVersion version = version_of(st);
  {
    std::lock_guard lock(verified_mutex);
    if (verified.contains(version)) return;
  }
  const auto digests = hub_blob_digests(os, *blob);
  if (!digests) return;  // not named by a digest: nothing to check it against
  if (digests->first != digests->second)
    throw Error(ErrorCode::integrity,
                fmt::format("the cached file's bytes do not match its blob's name ({}): it "
                            "changed on disk; `ballast cache verify --delete` removes it",
                            blob->filename().string()),
                {.source = source, .expected = digests->first, .actual = digests->second});
  std::lock_guard lock(verified_mutex);
  verified.insert(version);
}

}  // namespace ballast
