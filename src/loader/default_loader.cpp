// The default WeightLoader (see default_loader.hpp).
#include "loader/default_loader.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ballast/error.hpp"
#include "loader/checkpoint.hpp"
#include "loader/materialize.hpp"
#include "remote/hub_client.hpp"
#include "remote/remote_context.hpp"
#include "remote/s3_object.hpp"
#include "transform/plan.hpp"
#include "util/shape_util.hpp"
#include "util/thread_pool.hpp"

namespace ballast {
namespace {

constexpr size_t kCheckpointCacheEntries = 64;

// A key identifying a source for the checkpoint cache.
std::string cache_key(const WeightSource& source) {
  std::string key = describe(source);
  // A local file or folder that changed on disk (size or modification time) is parsed anew.
  if (const auto* f = std::get_if<FileSource>(&source.location)) {
    struct stat st {};
    if (::stat(f->path.c_str(), &st) == 0)
      key += fmt::format("|{}:{}.{}", st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  }
  // The full URL (describe() redacts the query) and the headers (credentials differ by them).
  if (const auto* u = std::get_if<UrlSource>(&source.location)) {
    key += "|" + u->url;
    for (const auto& [name, value] : u->headers) key += fmt::format("|{}={}", name, value);
  }
  if (const auto* s3 = std::get_if<S3Source>(&source.location))
    key +=
        fmt::format("|region={}|endpoint={}", s3->region.value_or(""), s3->endpoint.value_or(""));
  if (const auto* h = std::get_if<HuggingFaceSource>(&source.location); h && h->cache_dir)
    key += "|cache=" + h->cache_dir->string();
  if (const auto* m = std::get_if<MemorySource>(&source.location))
    key += fmt::format("@{}", static_cast<const void*>(m->bytes.data()));
  if (source.format) key += "|format=" + to_string(*source.format);
  if (source.raw_layout)
    key += fmt::format("|raw={}:{}:{}", dtype_name(source.raw_layout->dtype),
                       fmt::join(source.raw_layout->shape, "x"), source.raw_layout->offset);
  return key;
}

class DefaultLoader final : public WeightLoader {
 public:
  explicit DefaultLoader(WeightLoaderConfig config)
      : config_(std::move(config)),
        remote_(make_remote_context(config_)),
        pool_(thread_count(config_)) {
    if (config_.alignment < 16 || (config_.alignment & (config_.alignment - 1)) != 0 ||
        config_.alignment > 4096)
      throw Error(
          ErrorCode::invalid_argument,
          fmt::format("alignment must be a power of two in [16, 4096], got {}", config_.alignment));
    if (config_.read_chunk_bytes == 0)
      throw Error(ErrorCode::invalid_argument, "read_chunk_bytes must be positive");
    // Every thread gets at least one 4 KiB page of bounce buffer.
    if (config_.max_staging_bytes < 4096ull * pool_.size())
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("max_staging_bytes must be at least 4 KiB per thread ({} bytes)",
                              4096ull * pool_.size()));
  }

  std::future<TensorRef> load_tensor_async(TensorSpec spec) override {
    return pool_.submit([this, spec = std::move(spec)]() -> TensorRef { return load(spec); });
  }

  std::future<std::vector<TensorRef>> load_tensors_async(std::vector<TensorSpec> specs) override {
    struct Batch {
      std::vector<TensorSpec> specs;
      std::vector<TensorRef> results;
      std::atomic<size_t> remaining;
      std::mutex mutex;
      std::exception_ptr error;
      std::promise<std::vector<TensorRef>> promise;
    };
    auto batch = std::make_shared<Batch>();
    batch->specs = std::move(specs);
    batch->results.resize(batch->specs.size());
    batch->remaining = batch->specs.size();
    auto future = batch->promise.get_future();
    if (batch->specs.empty()) {
      batch->promise.set_value({});
      return future;
    }
    for (size_t i = 0; i < batch->specs.size(); ++i) {
      pool_.post([this, batch, i] {
        try {
          batch->results[i] = load(batch->specs[i]);
        } catch (...) {
          std::lock_guard lock(batch->mutex);
          if (!batch->error) batch->error = std::current_exception();
        }
        if (--batch->remaining == 0) {
          if (batch->error)
            batch->promise.set_exception(batch->error);
          else
            batch->promise.set_value(std::move(batch->results));
        }
      });
    }
    return future;
  }

  std::future<void> load_tensors_streaming_async(std::vector<TensorSpec> specs,
                                                 TensorCallback on_tensor) override {
    struct Stream {
      std::vector<TensorSpec> specs;
      TensorCallback on_tensor;
      size_t remaining = 0;
      std::mutex mutex;  // serializes on_tensor and guards the fields below
      std::exception_ptr error;
      std::promise<void> promise;
    };
    auto stream = std::make_shared<Stream>();
    stream->specs = std::move(specs);
    stream->on_tensor = std::move(on_tensor);
    stream->remaining = stream->specs.size();
    auto future = stream->promise.get_future();
    if (stream->specs.empty()) stream->promise.set_value();
    for (size_t i = 0; i < stream->specs.size(); ++i) {
      pool_.post([this, stream, i] {
        auto failed = [&] {
          std::lock_guard lock(stream->mutex);
          return stream->error != nullptr;
        };
        std::exception_ptr error;
        TensorRef tensor;
        if (!failed()) {  // after a failure the remaining loads are skipped
          try {
            tensor = load(stream->specs[i]);
          } catch (...) {
            error = std::current_exception();
          }
        }
        std::lock_guard lock(stream->mutex);
        if (tensor && !stream->error) {
          try {
            const std::string name = tensor->name();
            stream->on_tensor(name, std::move(tensor));
          } catch (...) {
            error = std::current_exception();
          }
        }
        if (error && !stream->error) stream->error = error;
        if (--stream->remaining == 0) {
          if (stream->error)
            stream->promise.set_exception(stream->error);
          else
            stream->promise.set_value();
        }
      });
    }
    return future;
  }

  std::future<bool> is_available_async(WeightSource source) override {
    return pool_.submit([this, source = std::move(source)] { return available(source); });
  }

  std::future<WeightMetadata> get_metadata_async(WeightSource source) override {
    return pool_.submit([this, source = std::move(source)] { return metadata(source); });
  }

  std::future<void> preload_async(WeightSource source) override {
    return pool_.submit([this, source = std::move(source)] { preload_now(source); });
  }

  WeightLoaderCapabilities capabilities() const override {
    WeightLoaderCapabilities caps;
    for (const auto& parser : registered_format_parsers()) caps.formats.push_back(parser->format());
    caps.sources = {"file", "memory", "url", "huggingface", "s3"};
    caps.transformations = {"transpose", "reshape", "cast", "slice", "scale", "quantize"};
    caps.devices = {Device::Kind::cpu};
    for (const auto& f : config_.factories)
      if (f && !f->device().is_host()) caps.devices.push_back(f->device().kind);
    caps.max_tensor_size = config_.limits.max_tensor_bytes;
    caps.supports_streaming = true;
    caps.supports_concurrent_loading = true;
    caps.limits = config_.limits;
    return caps;
  }

 private:
  static unsigned thread_count(const WeightLoaderConfig& config) {
    if (config.num_threads > 0) return static_cast<unsigned>(config.num_threads);
    return std::max(1u, std::thread::hardware_concurrency());
  }

  CheckpointOptions checkpoint_options() const {
    return {.read_mode = config_.read_mode,
            .limits = config_.limits,
            .verify_checksums = config_.enable_integrity_checks,
            .remote = remote_};
  }

  std::shared_ptr<Checkpoint> checkpoint(const WeightSource& source) {
    const std::string key = cache_key(source);
    {
      std::lock_guard lock(cache_mutex_);
      if (auto it = cache_.find(key); it != cache_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second.second);
        return it->second.first;
      }
    }
    auto cp = Checkpoint::open(source, checkpoint_options());
    std::lock_guard lock(cache_mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second.first;
    insert_locked(key, cp);
    return cp;
  }

  // Keeps `cp` as the checkpoint of `key`, replacing any earlier one.
  void remember(const std::string& key, std::shared_ptr<Checkpoint> cp) {
    std::lock_guard lock(cache_mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      lru_.erase(it->second.second);
      cache_.erase(it);
    }
    insert_locked(key, std::move(cp));
  }

  void insert_locked(const std::string& key, std::shared_ptr<Checkpoint> cp) {
    lru_.push_front(key);
    cache_.emplace(key, std::make_pair(std::move(cp), lru_.begin()));
    if (cache_.size() > kCheckpointCacheEntries) {
      cache_.erase(lru_.back());
      lru_.pop_back();
    }
  }

  TensorFactory& factory_for(Device device, const std::string& tensor) {
    for (const auto& f : config_.factories)
      if (f && f->device() == device) return *f;
    if (device.is_host()) return *cpu_tensor_factory();
    throw Error(ErrorCode::unsupported,
                fmt::format("no TensorFactory for device {} (pass one in "
                            "WeightLoaderConfig::factories)",
                            to_string(device)),
                {.tensor = tensor});
  }

  TensorRef load(const TensorSpec& spec) {
    const std::string where = describe(spec.source);
    try {
      WeightSource source = spec.source;
      if (source.format && source.format->kind == WeightFormat::Kind::raw && !source.raw_layout &&
          spec.dtype && !spec.shape.empty() && spec.transformations.empty())
        source.raw_layout = RawLayout{*spec.dtype, spec.shape, 0};
      auto cp = checkpoint(source);
      const std::string name = spec.name.empty() ? cp->default_tensor_name() : spec.name;
      try {
        const TensorEntry& entry = cp->entry(name);
        LoadPlan plan = plan_load(entry, spec.transformations);
        check_expectations(spec, plan, name);
        TensorFactory& device_factory = factory_for(spec.device, name);
        MaterializeOptions options{
            .read_mode = config_.read_mode,
            .alignment = config_.alignment,
            .host_factory = cpu_tensor_factory().get(),
            .io = {.method = io_method_for(config_.read_mode),
                   .chunk_bytes = config_.read_chunk_bytes,
                   .staging_bytes_per_thread = config_.max_staging_bytes / pool_.size(),
                   .pool = &pool_,
                   .helpers = pool_.size() - 1}};
        if (spec.device.is_host()) options.host_factory = &device_factory;
        auto host = materialize(plan, name, options);
        if (spec.device.is_host()) return host;
        if (!host->parts().empty())
          throw Error(ErrorCode::unsupported, "quantized bundles load to the host only");
        auto storage = device_factory.allocate(host->nbytes(), config_.alignment);
        device_factory.upload(*storage, 0, host->data(), host->nbytes());
        return std::make_shared<Tensor>(name, host->dtype(), host->shape(), storage, 0,
                                        host->nbytes());
      } catch (Error& e) {
        e.with_tensor(name);
        throw;
      }
    } catch (Error& e) {
      e.with_source(where);
      throw;
    }
  }

  static void check_expectations(const TensorSpec& spec, const LoadPlan& plan,
                                 const std::string& name) {
    if (!spec.shape.empty() && spec.shape != plan.result_shape())
      throw Error(ErrorCode::shape_mismatch, "the tensor's shape differs from the spec",
                  {.tensor = name,
                   .expected = shape_text(spec.shape),
                   .actual = shape_text(plan.result_shape())});
    if (spec.dtype && *spec.dtype != plan.result_dtype())
      throw Error(ErrorCode::dtype_mismatch,
                  "the tensor's dtype differs from the spec (add a cast step to convert)",
                  {.tensor = name,
                   .expected = std::string(dtype_name(*spec.dtype)),
                   .actual = std::string(dtype_name(plan.result_dtype()))});
  }

  bool available(const WeightSource& source) {
    if (const auto* file = std::get_if<FileSource>(&source.location)) {
      std::error_code ec;
      return std::filesystem::exists(file->path, ec);
    }
    if (std::holds_alternative<MemorySource>(source.location)) return true;
    if (const auto* url = std::get_if<UrlSource>(&source.location)) {
      try {
        return http_exists(*remote_->http, make_http_target(url->url, url->headers));
      } catch (Error& e) {
        e.with_source(describe(source));
        throw;
      }
    }
    if (const auto* hub = std::get_if<HuggingFaceSource>(&source.location)) {
      try {
        HubClient client(remote_, hub_settings_from_env(hub->cache_dir), hub->repo_id);
        const std::string revision = hub->revision.value_or("main");
        if (!hub->filename.empty()) return client.exists(revision, hub->filename);
        return client.exists(revision, "model.safetensors.index.json") ||
               client.exists(revision, "model.safetensors");
      } catch (Error& e) {
        e.with_source(describe(source));
        throw;
      }
    }
    const auto& s3 = std::get<S3Source>(source.location);
    try {
      return http_exists(*remote_->http, s3_target(s3_settings_from_env(s3), s3.bucket, s3.key));
    } catch (Error& e) {
      e.with_source(describe(source));
      throw;
    }
  }

  WeightMetadata metadata(const WeightSource& source) {
    try {
      auto cp = checkpoint(source);
      WeightMetadata meta;
      meta.format = cp->format();
      for (const TensorEntry* e : cp->entries()) {
        meta.tensors.emplace(e->name, TensorInfo{e->dtype, e->shape, e->nbytes()});
        meta.total_size_bytes += e->nbytes();
        meta.dtypes.insert(e->dtype);
      }
      meta.extra = cp->extra_json();
      return meta;
    } catch (Error& e) {
      e.with_source(describe(source));
      throw;
    }
  }

  // Local files: parses every shard and asks the kernel to read the files ahead into the page
  // cache. Remote sources: with caching on, opening each shard downloads it into the cache;
  // with caching off, every shard is read whole into memory, and the loader keeps that
  // checkpoint for later loads of the source.
  void preload_now(const WeightSource& source) {
    const bool remote = !std::holds_alternative<FileSource>(source.location) &&
                        !std::holds_alternative<MemorySource>(source.location);
    if (remote && !config_.enable_caching) {
      CheckpointOptions options = checkpoint_options();
      options.shards_in_memory = true;
      auto cp = Checkpoint::open(source, options);
      cp->entries();
      remember(cache_key(source), cp);
      return;
    }
    auto cp = checkpoint(source);
    cp->entries();
    for (const auto& path : cp->files()) {
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
      ::close(fd);
    }
  }

  WeightLoaderConfig config_;
  std::shared_ptr<const RemoteContext> remote_;
  std::mutex cache_mutex_;
  std::list<std::string> lru_;
  std::map<std::string, std::pair<std::shared_ptr<Checkpoint>, std::list<std::string>::iterator>>
      cache_;
  ThreadPool pool_;  // last: its destructor drains tasks that use the members above
};

}  // namespace

std::unique_ptr<WeightLoader> make_default_loader(const WeightLoaderConfig& config) {
  return std::make_unique<DefaultLoader>(config);
}

}  // namespace ballast
