// Listing a Hub repository's files (see hub_repo_files.hpp).
#include "remote/hub_repo_files.hpp"

#include <sys/stat.h>

#include <algorithm>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "remote/cache_files.hpp"
#include "remote/hub_errors.hpp"
#include "remote/hub_gguf_tag.hpp"
#include "remote/url.hpp"
#include "util/bounded_json.hpp"

namespace ballast {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxListingBytes = 64 << 20;  // the model info of a repo with many files
constexpr size_t kMaxRepoFiles = 200000;
constexpr size_t kMaxPathChars = 4096;
constexpr uint32_t kMaxListingDepth = 16;

[[noreturn]] void bad_listing(const std::string& where, std::string_view why) {
  throw Error(ErrorCode::network,
              fmt::format("the Hub's model info is not usable: {} (is HF_ENDPOINT a Hub?)", why),
              {.source = where});
}

std::string checked_path(const nlohmann::json& name, const std::string& where) {
  if (!name.is_string()) bad_listing(where, "a sibling without an \"rfilename\" string");
  const auto& text = name.get_ref<const std::string&>();
  if (text.empty() || text.size() > kMaxPathChars) bad_listing(where, "an empty or long file name");
  return confined_relative_path(text, where);
}

HubRepoFiles parse_listing(const std::string& body, const std::string& where) {
  const JsonProblem problem = check_json(body, kMaxListingDepth);
  if (problem.kind != JsonProblem::Kind::none) bad_listing(where, problem.detail);
  const nlohmann::json info = parse_checked_json(body);
  if (!info.is_object()) bad_listing(where, "not a JSON object");
  auto sha = info.find("sha");
  auto siblings = info.find("siblings");
  if (sha == info.end() || !sha->is_string() || !is_commit_hash(sha->get<std::string>()))
    bad_listing(where, "no commit hash in \"sha\"");
  if (siblings == info.end() || !siblings->is_array()) bad_listing(where, "no \"siblings\" list");
  if (siblings->size() > kMaxRepoFiles)
    throw Error(
        ErrorCode::limit_exceeded,
        fmt::format("the repository lists {} files, more than {}", siblings->size(), kMaxRepoFiles),
        {.source = where});
  HubRepoFiles out{sha->get<std::string>(), {}, false};
  for (const auto& sibling : *siblings) {
    if (!sibling.is_object()) bad_listing(where, "a sibling that is not an object");
    auto name = sibling.find("rfilename");
    out.paths.push_back(checked_path(name == sibling.end() ? nlohmann::json() : *name, where));
  }
  std::ranges::sort(out.paths);
  out.paths.erase(std::unique(out.paths.begin(), out.paths.end()), out.paths.end());
  return out;
}

HubRepoFiles listed_by_the_hub(const HubClient& hub, const std::string& revision,
                               const std::string& where) {
  std::string body;
  bool too_large = false;
  HttpRequest request{.url = fmt::format("{}/api/models/{}/revision/{}", hub.settings().endpoint,
                                         hub.repo(), url_quote(revision, false)),
                      .headers = hub.auth_headers(),
                      .expected_bytes = 1 << 20};
  request.on_headers = [&](const HttpResponse&) {  // each attempt starts a new body
    body.clear();
    return true;
  };
  request.on_body = [&](std::span<const std::byte> bytes) {
    too_large = bytes.size() > kMaxListingBytes - body.size();
    if (!too_large) body.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return !too_large;
  };
  HttpResult r = http_perform_retried(*hub.remote().http, request);
  if (too_large)
    throw Error(ErrorCode::limit_exceeded,
                fmt::format("the Hub's model info is larger than {} bytes", kMaxListingBytes),
                {.source = where});
  if (r.curl_code != 0 || r.response.status < 200 || r.response.status >= 300)
    throw_hub_error(r, where, !hub.settings().token.empty());
  return parse_listing(body, where);
}

// Adds the files under `folder` (links to blobs that exist), relative to `snapshot`, to `paths`
// (at most kMaxRepoFiles), descending into subfolders but not into links to folders.
void add_snapshot_files(const Os& os, const fs::path& snapshot, const fs::path& folder,
                        std::vector<std::string>& paths) {
  std::vector<FolderEntry> entries;
  try {
    entries = os.list_folder(folder);
  } catch (const Error&) {
    return;  // unreadable: as if empty
  }
  for (const FolderEntry& entry : entries) {
    if (paths.size() == kMaxRepoFiles) return;
    if (entry.regular_file) {
      paths.push_back(entry.path.lexically_relative(snapshot).generic_string());
    } else if (const auto st = file_status(os, entry.path, /*follow=*/false);
               st && S_ISDIR(st->st_mode)) {
      add_snapshot_files(os, snapshot, entry.path, paths);
    }
  }
}

// The cached snapshot of `revision` (its commit itself, or refs/<revision>), when there is one.
std::optional<HubRepoFiles> listed_by_the_cache(const HubClient& hub, const std::string& revision) {
  const auto commit = hub.cache().commit_of(revision);
  if (!commit) return std::nullopt;
  const fs::path snapshot = hub.cache().root() / "snapshots" / *commit;
  const Os& os = *hub.cache().os();
  const auto st = file_status(os, snapshot);
  if (!st || !S_ISDIR(st->st_mode)) return std::nullopt;
  HubRepoFiles out{*commit, {}, true};
  add_snapshot_files(os, snapshot, snapshot, out.paths);
  std::ranges::sort(out.paths);
  return out;
}

}  // namespace

HubRepoFiles list_hub_files(const HubClient& hub, const std::string& revision) {
  const std::string where = hub.describe(revision, "");
  if (hub.offline()) {
    if (auto cached = listed_by_the_cache(hub, revision)) return *cached;
    throw Error(ErrorCode::not_found,
                fmt::format("offline (HF_HUB_OFFLINE) and the revision is not cached; {}",
                            hub.fetch_hint(revision)),
                {.source = where});
  }
  try {
    return listed_by_the_hub(hub, revision, where);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::network && e.code() != ErrorCode::auth) throw;
    if (auto cached = listed_by_the_cache(hub, revision)) return *cached;
    throw;
  }
}

HubRepoFiles list_hub_gguf_files(const HubClient& hub, const std::string& revision,
                                 std::string_view tag) {
  HubRepoFiles listing = list_hub_files(hub, revision);
  listing.paths = gguf_files_for_tag(listing.paths, tag, hub.describe(revision, ""));
  return listing;
}

}  // namespace ballast
