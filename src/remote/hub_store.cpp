// A Hugging Face Hub repository as a Store (see hub_store.hpp).
#include "remote/hub_store.hpp"

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "remote/hub_cache.hpp"
#include "remote/hub_repo_files.hpp"
#include "remote/lazy_cached_source.hpp"
#include "remote/url.hpp"

namespace ballast {
namespace {

// What a whole repository's weights are, tried in this order (the first present wins, as in
// the Hub's own libraries: safetensors before PyTorch).
constexpr const char* kRepoWeightFiles[] = {"model.safetensors.index.json", "model.safetensors",
                                            "pytorch_model.bin.index.json", "pytorch_model.bin"};

// The folder part of a repository path ("a/b/" for "a/b/c"), "" at the top.
std::string path_folder(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

}  // namespace

HubStore::HubStore(std::shared_ptr<const RemoteContext> remote, HuggingFaceSource source,
                   ReadMode read_mode)
    : remote_(std::move(remote)),
      source_(std::move(source)),
      read_mode_(read_mode),
      revision_(source_.revision.value_or("main")) {}

std::shared_ptr<HubClient> HubStore::hub() const {
  std::lock_guard lock(hub_mutex_);
  if (!hub_)
    hub_ = std::make_shared<HubClient>(remote_, hub_settings_from_env(source_.cache_dir),
                                       source_.repo_id);
  return hub_;
}

std::string HubStore::weight_file(const HubClient& hub) const {
  for (const char* candidate : kRepoWeightFiles)
    if (hub.exists(revision_, candidate)) return candidate;
  // A missing repository or revision, or a gated one, says so (the listing's error).
  if (!hub.offline()) list_hub_files(hub, revision_);
  throw Error(ErrorCode::not_found,
              hub.offline() ? "offline (HF_HUB_OFFLINE) and the repository's weights are not "
                              "cached (model.safetensors[.index.json] or "
                              "pytorch_model.bin[.index.json]); " +
                                  hub.fetch_hint(revision_)
                            : "the repository has no model.safetensors[.index.json] or "
                              "pytorch_model.bin[.index.json]; name the file",
              {.source = hub.describe(revision_, "")});
}

std::vector<std::string> HubStore::expand(const std::string& object) {
  auto hub = this->hub();
  if (object.empty() && !source_.quant_tag.empty()) {  // hf://org/repo-GGUF:Q4_K_M
    HubRepoFiles tagged = list_hub_gguf_files(*hub, revision_, source_.quant_tag);
    if (remote_->caching && !tagged.from_cache) hub->cache().write_ref(revision_, tagged.commit);
    revision_ = tagged.commit;
    return tagged.paths;
  }
  std::string path = object.empty() ? weight_file(*hub) : object;
  path = confined_relative_path(path, hub->describe(revision_, ""));
  // Every file of the checkpoint comes from one commit, even if the branch moves meanwhile.
  if (!hub->offline()) revision_ = hub->commit(revision_, path);
  return {path};
}

bool HubStore::exists(const std::string& object) {
  auto hub = this->hub();
  if (!object.empty()) return hub->exists(revision_, object);
  if (!source_.quant_tag.empty()) {  // a tag exists when it names the repo's GGUF file(s)
    try {
      return !list_hub_gguf_files(*hub, revision_, source_.quant_tag).paths.empty();
    } catch (const Error& e) {
      if (e.code() == ErrorCode::not_found) return false;
      throw;
    }
  }
  return hub->exists(revision_, "model.safetensors.index.json") ||
         hub->exists(revision_, "model.safetensors");
}

// Online with caching on, a file not in the Hub cache is read by ranges and downloaded into the
// cache only when a load wants most of it (files beside it, ONNX external data, are downloaded
// when opened); otherwise (cached, offline, caching off) the HubClient opens it.
ShardInput HubStore::open(const std::string& object) {
  auto hub = this->hub();
  const std::string& revision = revision_;
  const std::string& path = object;
  if (!remote_->caching || hub->offline()) return hub->open_shard(revision, path, read_mode_);
  const HubRepoCache& cache = hub->cache();
  if (cache.cached(revision, path))  // a commit's cached file: no request
    return hub->open_shard(revision, path, read_mode_);
  // Another revision's blob of the same bytes is linked, not downloaded.
  const HubFileInfo info = hub->head(revision, path);
  if (cache.has_blob(info.etag, info.size)) return hub->open_shard(revision, path, read_mode_);
  const std::string folder = path_folder(path);
  SiblingOpener siblings = [hub, revision, folder, read_mode = read_mode_](std::string_view rel) {
    const std::string sibling =
        folder + confined_relative_path(rel, hub->describe(revision, folder));
    return hub->open_shard(revision, sibling, read_mode).bytes;
  };
  // The header bytes read already start the blob's partial download, which HubClient continues.
  CacheFill fill = [hub, etag = info.etag, revision, path,
                    read_mode = read_mode_](std::vector<std::byte> prefix) {
    hub->cache().begin_partial(etag, prefix);
    return open_file_source(hub->download(revision, path),
                            file_open_options(read_mode, hub->remote().os));
  };
  return ShardInput{
      std::make_shared<LazyCachedSource>(hub->open_ranged(revision, path), std::move(fill)),
      std::move(siblings),
      {}};
}

std::vector<std::byte> HubStore::read_small(const std::string& object, uint64_t max_bytes) {
  return hub()->read_small(revision_, object, max_bytes);
}

std::string HubStore::sibling(const std::string& object, std::string_view relative) const {
  return path_folder(object) + confined_relative_path(relative, describe(object));
}

std::string HubStore::describe(const std::string& object) const {
  return hub()->describe(revision_, object);
}

std::string HubStore::identity() const {
  return source_.cache_dir ? "|cache=" + source_.cache_dir->string() : std::string();
}

}  // namespace ballast
