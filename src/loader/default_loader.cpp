// The default WeightLoader (see default_loader.hpp).
#include "loader/default_loader.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ballast/error.hpp"
#include "core/batch_arena.hpp"
#include "io/direct_sweep.hpp"
#include "loader/checkpoint.hpp"
#include "loader/coalesced_reads.hpp"
#include "loader/mapping_policy.hpp"
#include "loader/materialize.hpp"
#include "remote/hub_client.hpp"
#include "remote/lazy_cached_source.hpp"
#include "remote/remote_context.hpp"
#include "remote/s3_object.hpp"
#include "transform/plan.hpp"
#include "util/checked.hpp"
#include "util/parallel_for.hpp"
#include "util/shape_util.hpp"
#include "util/thread_pool.hpp"

namespace ballast {
namespace {

constexpr size_t kCheckpointCacheEntries = 64;

// A key naming a source: equal keys open the same checkpoint (as long as its files do not
// change on disk).
std::string source_key(const WeightSource& source) {
  std::string key = describe(source);
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

// The checkpoint cache's key: the source's, and for a local file or folder its size and
// modification time, so that one changed on disk is parsed anew.
std::string cache_key(const WeightSource& source) {
  std::string key = source_key(source);
  if (const auto* f = std::get_if<FileSource>(&source.location)) {
    struct stat st {};
    if (::stat(f->path.c_str(), &st) == 0)
      key += fmt::format("|{}:{}.{}", st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  }
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

  // A zero-copy view is made on the calling thread: it needs no staging and no read but its
  // prefault, and handing it to a loader thread costs more than making it. Any other tensor
  // is loaded by the loader's threads.
  TensorRef load_tensor(TensorSpec spec) override {
    PreparedLoad p = prepare(spec, [this](const WeightSource& s) { return checkpoint(s); });
    expect_remote_reads({&p, 1});
    p.mapping = mappings_.mapping(p.plan);
    if (p.device.is_host() && !p.plan.quantize && can_view_without_copy(p.plan, p.mapping.get()))
      return finish(p);
    return pool_.submit([this, &p] { return finish(p); }).get();
  }

  std::future<TensorRef> load_tensor_async(TensorSpec spec) override {
    return pool_.submit([this, spec = std::move(spec)]() -> TensorRef { return load(spec); });
  }

  std::future<std::vector<TensorRef>> load_tensors_async(std::vector<TensorSpec> specs) override {
    return pool_.submit([this, specs = std::move(specs)] {
      std::vector<TensorRef> results(specs.size());
      load_batch(specs, [&](size_t i, TensorRef tensor) { results[i] = std::move(tensor); });
      return results;
    });
  }

  std::future<void> load_tensors_streaming_async(std::vector<TensorSpec> specs,
                                                 TensorCallback on_tensor) override {
    return pool_.submit([this, specs = std::move(specs), on_tensor = std::move(on_tensor)] {
      std::mutex serial;  // one on_tensor call at a time
      load_batch(specs, [&](size_t, TensorRef tensor) {
        std::lock_guard lock(serial);
        const std::string name = tensor->name();
        on_tensor(name, std::move(tensor));
      });
    });
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

  // A spec resolved to its plan, before any tensor byte is read. It points into the spec,
  // which outlives it.
  struct PreparedLoad {
    const WeightSource* source = nullptr;  // described only in errors
    std::string name;
    LoadPlan plan;
    Device device;
    TensorFactory* device_factory = nullptr;
    std::shared_ptr<const MappedRegion> mapping;  // mappings_.mapping(plan)
    std::shared_ptr<ByteSource> shard;            // the bytes of the shard holding the tensor
  };

  using CheckpointOpener = std::function<std::shared_ptr<Checkpoint>(const WeightSource&)>;

  TensorRef load(const TensorSpec& spec) {
    PreparedLoad p = prepare(spec, [this](const WeightSource& s) { return checkpoint(s); });
    expect_remote_reads({&p, 1});
    p.mapping = mappings_.mapping(p.plan);
    return finish(p);
  }

  // A remote shard not cached yet (caching on) is downloaded into its cache before a load that,
  // with the loads before it, reads at least half of it; smaller loads read their ranges
  // (LazyCachedSource, docs/remote.md).
  static void expect_remote_reads(std::span<const PreparedLoad> prepared) {
    std::map<const ByteSource*, uint64_t> bytes;
    for (const PreparedLoad& p : prepared)
      bytes[p.shard.get()] += dtype_bytes_for(p.plan.view.dtype, p.plan.view.numel()).value_or(0);
    for (const auto& [shard, n] : bytes)
      if (shard) expect_reads(*shard, n);
  }

  // Looks up each distinct byte source's mapping once for the batch: every lookup re-checks
  // the file's size (FileByteSource::mapping), a system call per tensor otherwise.
  void look_up_mappings(std::vector<PreparedLoad>& prepared) {
    std::unordered_map<const ByteSource*, std::shared_ptr<const MappedRegion>> seen;
    for (PreparedLoad& p : prepared) {
      auto [it, fresh] = seen.try_emplace(p.plan.view.data.get());
      if (fresh) it->second = mappings_.mapping(p.plan);
      p.mapping = it->second;
    }
  }

  // `open` finds the checkpoint of a source (the loader's cache, or a batch's memo of it).
  PreparedLoad prepare(const TensorSpec& spec, const CheckpointOpener& open) {
    PreparedLoad p{.source = &spec.source, .device = spec.device};
    try {
      // A raw source without a layout takes the spec's dtype and shape.
      std::optional<WeightSource> with_layout;
      if (spec.source.format && spec.source.format->kind == WeightFormat::Kind::raw &&
          !spec.source.raw_layout && spec.dtype && !spec.shape.empty() &&
          spec.transformations.empty()) {
        with_layout = spec.source;
        with_layout->raw_layout = RawLayout{*spec.dtype, spec.shape, 0};
      }
      auto cp = open(with_layout ? *with_layout : spec.source);
      p.name = spec.name.empty() ? cp->default_tensor_name() : spec.name;
      try {
        p.plan = plan_load(cp->entry(p.name), spec.transformations);
        p.shard = cp->shard_bytes(p.name);
        check_expectations(spec, p.plan, p.name);
        p.device_factory = &factory_for(spec.device, p.name);
      } catch (Error& e) {
        e.with_tensor(p.name);
        throw;
      }
    } catch (Error& e) {
      e.with_source(describe(spec.source));
      throw;
    }
    return p;
  }

  MaterializeOptions materialize_options(const PreparedLoad& p) {
    return {.read_mode = config_.read_mode,
            .alignment = config_.alignment,
            .host_factory = p.device.is_host() ? p.device_factory : cpu_tensor_factory().get(),
            .io = {.method = io_method_for(config_.read_mode),
                   .chunk_bytes = config_.read_chunk_bytes,
                   .staging_bytes_per_thread = config_.max_staging_bytes / pool_.size(),
                   .pool = &pool_,
                   .helpers = pool_.size() - 1},
            .mapping = p.mapping};
  }

  // Runs `body`, naming the tensor and source of `p` in any Error it throws.
  template <typename F>
  static auto naming_errors(const PreparedLoad& p, F&& body) {
    try {
      return body();
    } catch (Error& e) {
      e.with_tensor(p.name);
      e.with_source(describe(*p.source));
      throw;
    }
  }

  TensorRef finish(const PreparedLoad& p) {
    return naming_errors(p, [&]() -> TensorRef {
      auto host = materialize(p.plan, p.name, materialize_options(p));
      if (p.device.is_host()) return host;
      if (!host->parts().empty())
        throw Error(ErrorCode::unsupported, "quantized bundles load to the host only");
      auto storage = p.device_factory->allocate(host->nbytes(), config_.alignment);
      p.device_factory->upload(*storage, 0, host->data(), host->nbytes());
      return std::make_shared<Tensor>(p.name, host->dtype(), host->shape(), storage, 0,
                                      host->nbytes());
    });
  }

  // Points the large owned host tensors of a batch that would each get a buffer of the default
  // host factory at one arena sized for all of them (see batch_arena.hpp), which the caller
  // keeps until the batch has allocated. Null, and nothing changed, for fewer than two such
  // tensors or when the kernel refuses the reservation.
  std::shared_ptr<BatchArena> place_in_one_arena(std::vector<PreparedLoad>& prepared) {
    const TensorFactory* host = cpu_tensor_factory().get();
    std::vector<PreparedLoad*> placed;
    uint64_t capacity = 0;
    for (PreparedLoad& p : prepared) {
      if (!p.device.is_host() || p.device_factory != host ||
          p.plan.out_nbytes < kArenaMinimumBytes ||
          !fills_one_owned_buffer(p.plan, p.mapping.get()))
        continue;
      // Room for the tensor at any alignment offset. A batch whose sizes do not add up in 64
      // bits (only hostile headers claim that much) is left to fail tensor by tensor.
      auto room = checked_add(p.plan.out_nbytes, config_.alignment);
      auto total = room ? checked_add(capacity, *room) : std::nullopt;
      if (!total) return nullptr;
      capacity = *total;
      placed.push_back(&p);
    }
    if (placed.size() < 2) return nullptr;
    auto arena = BatchArena::reserve(capacity);
    if (!arena) return nullptr;
    for (PreparedLoad* p : placed) p->device_factory = arena.get();
    return arena;
  }

  // Small host tensors whose reads cost a round trip each: not from a local file, from memory
  // or from an inflated zip member (see coalesced_reads.hpp).
  bool coalescible(const PreparedLoad& p) const {
    const ByteSource& data = *p.plan.view.data;
    return p.device.is_host() && is_plain_owned_read(p.plan, config_.read_mode, p.mapping.get()) &&
           !data.local_file(false) && !data.mapping_produces_bytes() && !data.mapping();
  }

  // With O_DIRECT, the plain host reads from one local file are one sweep (direct_sweep.hpp)
  // that keeps the device's queue full across tensors; read tensor by tensor, every tensor's
  // end would drain it.
  struct FileSweep {
    LocalFile file;               // with base 0: the offsets below are file offsets
    std::vector<size_t> specs;    // in spec order
    std::vector<uint64_t> first;  // file offset of each spec's bytes
  };

  std::map<int, FileSweep> plan_sweeps(const std::vector<PreparedLoad>& prepared) const {
    std::map<int, FileSweep> sweeps;  // by O_DIRECT descriptor: one per open file
    if (config_.read_mode != ReadMode::direct) return sweeps;
    for (size_t i = 0; i < prepared.size(); ++i) {
      const PreparedLoad& p = prepared[i];
      const View& view = p.plan.view;
      if (!p.device.is_host() || !is_plain_owned_read(p.plan, config_.read_mode, p.mapping.get()) ||
          !range_inside(view.offset, p.plan.out_nbytes, view.data->size()))
        continue;
      auto file = view.data->local_file(true);
      if (!file || file->direct_fd < 0) continue;
      FileSweep& sweep = sweeps[file->direct_fd];
      sweep.file = {.fd = file->fd, .direct_fd = file->direct_fd, .file_size = file->file_size};
      sweep.specs.push_back(i);
      sweep.first.push_back(file->base + view.offset);
    }
    return sweeps;
  }

  // Allocates every tensor of `sweep`, reads them in one sweep and delivers each as its last
  // byte lands. An error names the tensor whose bytes hold the failing offset.
  void run_sweep(const FileSweep& sweep, const std::vector<PreparedLoad>& prepared,
                 const std::function<void(size_t, TensorRef)>& deliver) {
    std::vector<DirectRange> ranges;
    std::vector<TensorRef> tensors;
    for (size_t k = 0; k < sweep.specs.size(); ++k) {
      const PreparedLoad& p = prepared[sweep.specs[k]];
      auto storage = naming_errors(
          p, [&] { return p.device_factory->allocate(p.plan.out_nbytes, config_.alignment); });
      ranges.push_back({sweep.first[k], {storage->data(), p.plan.out_nbytes}});
      tensors.push_back(std::make_shared<Tensor>(p.name, p.plan.out_dtype, p.plan.out_shape,
                                                 std::move(storage), 0, p.plan.out_nbytes));
    }
    const PreparedLoad& first = prepared[sweep.specs.front()];
    try {
      sweep_direct(sweep.file, ranges,
                   {.staging_bytes_per_thread = config_.max_staging_bytes / pool_.size(),
                    .pool = &pool_,
                    .helpers = pool_.size() - 1},
                   first.plan.view.data->name(),
                   [&](size_t k) { deliver(sweep.specs[k], std::move(tensors[k])); });
    } catch (Error& e) {
      const PreparedLoad* culprit = &first;
      for (size_t k = 0; k < ranges.size() && e.context().offset; ++k)
        if (*e.context().offset - ranges[k].offset < ranges[k].out.size()) {
          culprit = &prepared[sweep.specs[k]];
          break;
        }
      e.with_tensor(culprit->name);
      e.with_source(describe(*culprit->source));
      throw;
    }
  }

  // Loads every spec on the pool, handing each tensor to `deliver(i, tensor)` as it completes
  // (from any worker). Specs are resolved first, so a missing tensor fails before any byte is
  // read; then the plain reads of each local file are one O_DIRECT sweep (plan_sweeps), small
  // tensors that coalescible() picks are read in coalesced runs, and every other tensor on its
  // own. The first error stops the remaining work and is rethrown.
  void load_batch(const std::vector<TensorSpec>& specs,
                  const std::function<void(size_t, TensorRef)>& deliver) {
    // Each distinct source's checkpoint is looked up once per batch (the cache lookup stats
    // a local file each time).
    std::mutex memo_mutex;
    std::map<std::string, std::shared_ptr<Checkpoint>> memo;
    auto open = [&](const WeightSource& source) {
      const std::string key = source_key(source);
      {
        std::lock_guard lock(memo_mutex);
        if (auto it = memo.find(key); it != memo.end()) return it->second;
      }
      auto cp = checkpoint(source);
      std::lock_guard lock(memo_mutex);
      return memo.emplace(key, std::move(cp)).first->second;
    };
    std::vector<PreparedLoad> prepared(specs.size());
    parallel_for(&pool_, pool_.size() - 1, specs.size(),
                 [&](size_t i) { prepared[i] = prepare(specs[i], open); });
    expect_remote_reads(prepared);
    look_up_mappings(prepared);
    const auto arena = place_in_one_arena(prepared);

    // A run is staged whole, in this thread's staging share.
    const uint64_t share = config_.max_staging_bytes / pool_.size();
    CoalesceLimits limits;
    limits.max_span_bytes = std::min(config_.read_chunk_bytes, share);
    limits.max_tensor_bytes = std::min(limits.max_tensor_bytes, limits.max_span_bytes);
    // A job loads one spec on its own, one coalesced run of small ones, or one file's sweep.
    struct Job {
      size_t first_spec;  // the smallest spec number in the job
      std::span<const SmallRead> run;
      const FileSweep* sweep = nullptr;
    };
    const auto sweeps = plan_sweeps(prepared);
    std::vector<bool> swept(prepared.size(), false);
    std::vector<Job> jobs;
    for (const auto& [fd, sweep] : sweeps) {
      jobs.push_back({sweep.specs.front(), {}, &sweep});
      for (size_t i : sweep.specs) swept[i] = true;
    }
    std::vector<SmallRead> small;
    for (size_t i = 0; i < prepared.size(); ++i) {
      const LoadPlan& plan = prepared[i].plan;
      if (swept[i]) continue;
      if (plan.out_nbytes <= limits.max_tensor_bytes && coalescible(prepared[i]))
        small.push_back({i, plan.view.data.get(), plan.view.offset, plan.out_nbytes});
      else
        jobs.push_back({i, {}});
    }
    for (auto [begin, end] : coalesce_runs(small, limits)) {
      const std::span<const SmallRead> run(small.data() + begin, end - begin);
      const size_t first = std::min_element(run.begin(), run.end(), [](auto& a, auto& b) {
                             return a.index < b.index;
                           })->index;
      jobs.push_back({first, run.size() > 1 ? run : std::span<const SmallRead>{}});
    }
    // Earliest specs first, so a streaming caller gets the first layers first.
    std::sort(jobs.begin(), jobs.end(),
              [](const Job& a, const Job& b) { return a.first_spec < b.first_spec; });

    parallel_for(&pool_, pool_.size() - 1, jobs.size(), [&](size_t j) {
      const Job& job = jobs[j];
      if (job.sweep) {
        run_sweep(*job.sweep, prepared, deliver);
        return;
      }
      if (job.run.empty()) {
        deliver(job.first_spec, finish(prepared[job.first_spec]));
        return;
      }
      std::vector<std::byte*> outputs;
      std::vector<TensorRef> tensors;
      for (const SmallRead& read : job.run) {
        const PreparedLoad& p = prepared[read.index];
        auto storage = p.device_factory->allocate(p.plan.out_nbytes, config_.alignment);
        outputs.push_back(storage->data());
        tensors.push_back(std::make_shared<Tensor>(p.name, p.plan.out_dtype, p.plan.out_shape,
                                                   storage, 0, p.plan.out_nbytes));
      }
      const PreparedLoad& first = prepared[job.run.front().index];
      naming_errors(first, [&] { read_run(job.run, outputs, materialize_options(first).io); });
      for (size_t k = 0; k < job.run.size(); ++k) deliver(job.run[k].index, std::move(tensors[k]));
    });
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
      meta.values = cp->extra_values();
      meta.files = cp->shard_names();
      meta.ignored_files = cp->ignored_files();
      return meta;
    } catch (Error& e) {
      e.with_source(describe(source));
      throw;
    }
  }

  // Local files: parses every shard and asks the kernel to read the files ahead into the page
  // cache. Remote sources: with caching on, every shard is downloaded into the cache once its
  // header has been parsed; with caching off, every shard is read whole into memory, and the
  // loader keeps that checkpoint for later loads of the source.
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
    for (const auto& bytes : cp->shard_bytes()) fill_cache(*bytes);
    for (const auto& path : cp->files()) {
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
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
  MappingPolicy mappings_{config_.read_mode, config_.mapped_writes};
  ThreadPool pool_;  // last: its destructor drains tasks that use the members above
};

}  // namespace

std::unique_ptr<WeightLoader> make_default_loader(const WeightLoaderConfig& config) {
  return std::make_unique<DefaultLoader>(config);
}

}  // namespace ballast
