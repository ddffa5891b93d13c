// download_from_hub: `hf download` into the Hub cache (see ballast/hub.hpp).
#include "ballast/hub.hpp"

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "ballast/loader.hpp"
#include "remote/hub_client.hpp"
#include "remote/hub_patterns.hpp"
#include "remote/hub_repo_files.hpp"
#include "remote/remote_context.hpp"
#include "remote/url.hpp"

namespace ballast {
namespace {

namespace fs = std::filesystem;

// Weights whose header a ranged probe checks before the download (as a load's shards are).
bool probed_weight(const std::string& path) {
  return path.ends_with(".safetensors") || path.ends_with(".gguf");
}

// The files to fetch and the commit they come from.
struct Plan {
  std::string commit;
  std::vector<std::string> files;
  bool from_cache = false;
};

Plan plan_repo(const HubClient& hub, const HuggingFaceSource& source, const std::string& revision,
               const HubDownloadOptions& options) {
  if (!source.quant_tag.empty()) {
    HubRepoFiles tagged = list_hub_gguf_files(hub, revision, source.quant_tag);
    return {tagged.commit, std::move(tagged.paths), tagged.from_cache};
  }
  HubRepoFiles listing = list_hub_files(hub, revision);
  Plan plan{listing.commit, {}, listing.from_cache};
  for (auto& path : listing.paths)
    if (hub_path_selected(path, options.include, options.exclude))
      plan.files.push_back(std::move(path));
  if (plan.files.empty())
    throw Error(ErrorCode::not_found,
                listing.paths.empty()
                    ? std::string(listing.from_cache ? "the cached snapshot holds no file"
                                                     : "the repository has no files")
                    : fmt::format("none of the repository's {} files matches --include / "
                                  "--exclude",
                                  listing.paths.size()),
                {.source = hub.describe(revision, "")});
  return plan;
}

}  // namespace

HubDownload download_from_hub(const WeightSource& source, const WeightLoaderConfig& config,
                              const HubDownloadOptions& options) {
  const auto* hf = std::get_if<HuggingFaceSource>(&source.location);
  if (hf == nullptr)
    throw Error(ErrorCode::invalid_argument, "download_from_hub takes an hf:// source",
                {.source = describe(source)});
  if (!config.enable_caching)
    throw Error(ErrorCode::invalid_argument,
                "a Hub download writes into the Hub cache; it needs caching on (no --no-cache)",
                {.source = describe(source)});
  if (!hf->filename.empty() || !hf->quant_tag.empty()) {
    if (!options.include.empty() || !options.exclude.empty())
      throw Error(ErrorCode::invalid_argument,
                  "--include and --exclude apply to a whole repository, not to a file or a "
                  "quantization tag",
                  {.source = describe(source)});
  }
  auto remote = make_remote_context(config, real_os());
  const HubClient hub(remote, hub_settings_from_env(hf->cache_dir), hf->repo_id);
  const std::string revision = hf->revision.value_or("main");
  Plan plan;
  if (hf->filename.empty()) {
    plan = plan_repo(hub, *hf, revision, options);
  } else {
    const std::string path = confined_relative_path(hf->filename, hub.describe(revision, ""));
    plan = {hub.commit(revision, path), {path}, hub.offline()};
  }
  std::shared_ptr<WeightLoader> loader;  // for the probed weights, made when first needed
  HubDownload out;
  out.commit = plan.commit;
  out.from_cache = plan.from_cache;
  out.snapshot = hub.cache().root() / "snapshots" / plan.commit;
  for (const std::string& path : plan.files) {
    if (probed_weight(path) && !hub.cache().cached(plan.commit, path)) {
      if (!loader) loader = make_weight_loader(config);
      loader->preload(WeightSource::hugging_face(hf->repo_id, path, plan.commit, hf->cache_dir));
    }
    const fs::path local = hub.download(plan.commit, path);
    const auto st = file_status(*hub.cache().os(), local);
    if (!st) throw Error(ErrorCode::io, "the downloaded file is gone", {.source = local.string()});
    out.bytes += static_cast<uint64_t>(st->st_size);
    out.files.push_back(path);
  }
  // As snapshot_download: the branch or tag now names the commit listed (not for a commit
  // given as the revision, nor for a listing read from the cache), once every file of it is in
  // its snapshot; a file the Hub answers for from another commit failed the download above.
  if (!plan.from_cache) hub.cache().write_ref(revision, plan.commit);
  out.path = hf->filename.empty() && hf->quant_tag.empty() ? out.snapshot
                                                           : out.snapshot / plan.files.front();
  return out;
}

}  // namespace ballast
