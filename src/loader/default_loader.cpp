// The default WeightLoader (see default_loader.hpp).
#include "loader/default_loader.hpp"

#include <algorithm>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>

#include <fmt/format.h>

#include "ballast/cuda.hpp"
#include "ballast/error.hpp"
#include "core/produced_mapping.hpp"
#include "loader/batch_plan.hpp"
#include "loader/checkpoint_cache.hpp"
#include "loader/config_check.hpp"
#include "loader/device_load.hpp"
#include "loader/mapping_policy.hpp"
#include "loader/materialize.hpp"
#include "loader/preload.hpp"
#include "loader/prepared_load.hpp"
#include "loader/tensor_handoff.hpp"
#include "loader/tensor_selection.hpp"
#include "remote/lazy_cached_source.hpp"
#include "remote/remote_context.hpp"
#include "remote/source_store.hpp"
#include "transform/plan.hpp"
#include "util/joined_threads.hpp"
#include "util/parallel_for.hpp"
#include "util/shape_util.hpp"
#include "util/thread_pool.hpp"

namespace ballast {
namespace {

class DefaultLoader final : public WeightLoader {
 public:
  DefaultLoader(WeightLoaderConfig config, std::shared_ptr<const Os> os)
      : config_(checked(std::move(config))),
        checkpoints_(
            {.remote = make_remote_context(config_, os), .read_mode = config_.read_mode, .os = os},
            {.limits = config_.limits,
             .verify_checksums = config_.enable_integrity_checks,
             .os = os}),
        pool_(worker_thread_count(config_)) {}

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

  // The pool loads and puts each tensor into the hand-off; a delivery thread of the load's own
  // calls on_tensor (see tensor_handoff.hpp).
  std::future<void> load_tensors_streaming_async(std::vector<TensorSpec> specs,
                                                 TensorCallback on_tensor) override {
    auto handoff = std::make_shared<TensorHandoff>(std::move(on_tensor));
    pool_.post([this, handoff, specs = std::move(specs)] {
      try {
        load_batch(
            specs, [&](size_t, TensorRef tensor) { handoff->put(std::move(tensor)); },
            [&](std::exception_ptr error) { handoff->fail(std::move(error)); });
      } catch (...) {
        handoff->fail(std::current_exception());
      }
      handoff->close();
    });
    return deliveries_.start([handoff] { handoff->deliver_all(); });
  }

  std::future<std::map<std::string, TensorRef>> load_checkpoint_async(
      WeightSource source, std::vector<std::string> patterns,
      std::vector<Transformation> transformations) override {
    return pool_.submit([this, source = std::move(source), patterns = std::move(patterns),
                         steps = std::move(transformations)] {
      const auto specs = selected_specs(metadata(source), source, patterns, steps);
      std::mutex mutex;
      std::map<std::string, TensorRef> out;
      load_batch(specs, [&](size_t i, TensorRef tensor) {
        std::lock_guard lock(mutex);
        out.emplace(specs[i].name, std::move(tensor));
      });
      return out;
    });
  }

  std::future<bool> is_available_async(WeightSource source) override {
    return pool_.submit(
        [this, source = std::move(source)] { return source_available(source, checkpoints_); });
  }

  std::future<WeightMetadata> get_metadata_async(WeightSource source) override {
    return pool_.submit([this, source = std::move(source)] { return metadata(source); });
  }

  std::future<void> preload_async(WeightSource source) override {
    return pool_.submit([this, source = std::move(source)] {
      preload_source(source, checkpoints_, config_.enable_caching);
    });
  }

  WeightLoaderCapabilities capabilities() const override {
    WeightLoaderCapabilities caps;
    for (const auto& parser : registered_format_parsers()) caps.formats.push_back(parser->format());
    caps.sources = supported_source_kinds();
    caps.transformations = {"transpose", "reshape", "cast", "slice", "scale", "quantize"};
    caps.devices = {Device::Kind::cpu};
    if (cuda_device_count() > 0) caps.devices.push_back(Device::Kind::cuda);
    for (const auto& f : config_.factories)
      if (f && !f->device().is_host()) caps.devices.push_back(f->device().kind);
    caps.max_tensor_size = config_.limits.max_tensor_bytes;
    caps.supports_streaming = true;
    caps.supports_concurrent_loading = true;
    caps.limits = config_.limits;
    return caps;
  }

 private:
  // The configuration, checked before anything (threads, caches) is made from it.
  static WeightLoaderConfig checked(WeightLoaderConfig config) {
    check_weight_loader_config(config);
    return config;
  }

  // A CUDA device without a configured factory gets cudaMalloc'd tensors (made once per device;
  // throws not_found / unsupported naming the device where it cannot be used).
  TensorFactory& factory_for(Device device, const std::string& tensor) {
    for (const auto& f : config_.factories)
      if (f && f->device() == device) return *f;
    if (device.is_host()) return *cpu_tensor_factory();
    if (device.kind == Device::Kind::cuda) {
      std::lock_guard lock(device_factories_mutex_);
      auto& factory = device_factories_[device];
      if (!factory) factory = make_cuda_tensor_factory(device.index);
      return *factory;
    }
    throw Error(ErrorCode::unsupported,
                fmt::format("no TensorFactory for device {} (pass one in "
                            "WeightLoaderConfig::factories)",
                            to_string(device)),
                {.tensor = tensor});
  }

  std::shared_ptr<Checkpoint> checkpoint(const WeightSource& source) {
    return checkpoints_.checkpoint(source);
  }

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

  // A source that produces its bytes on demand (a deflated zip member) and that several tensors
  // of the batch view keeps what it produces, so that reading the views in any order inflates
  // it once, not once per view read behind the stream.
  static void expect_views_read_together(std::span<const PreparedLoad> prepared) {
    std::unordered_map<const ByteSource*, size_t> views;
    for (const PreparedLoad& p : prepared)
      if (p.plan.view.data && ++views[p.plan.view.data.get()] == 2)
        expect_several_reads(*p.plan.view.data);
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

  // Each thread's share of the staging budget.
  uint64_t staging_share() const { return config_.max_staging_bytes / pool_.size(); }

  ReadEngineOptions read_options() {
    return {.method = io_method_for(config_.read_mode),
            .chunk_bytes = config_.read_chunk_bytes,
            .staging_bytes_per_thread = staging_share(),
            .pool = &pool_,
            .helpers = pool_.size() - 1};
  }

  MaterializeOptions materialize_options(const PreparedLoad& p) {
    return {.read_mode = config_.read_mode,
            .alignment = config_.alignment,
            .host_factory = p.device.is_host() ? p.device_factory : cpu_tensor_factory().get(),
            .io = read_options(),
            .mapping = p.mapping};
  }

  TensorRef finish(const PreparedLoad& p) {
    return naming_errors(p, [&]() -> TensorRef {
      if (auto* device = dynamic_cast<DeviceTensorFactory*>(p.device_factory))
        return load_to_device(p, *device, device_uploads_.uploader_for(device->backend()),
                              materialize_options(p), config_.gpu_direct_storage);
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

  // Loads every spec on the pool, handing each tensor to `deliver(i, tensor)` as it completes
  // (from any worker). Specs are resolved first, so a missing tensor fails before any byte is
  // read; then the BatchPlan's jobs run: each local file's O_DIRECT sweep, coalesced runs of
  // small tensors, and every other tensor on its own. The first error stops the remaining work
  // and is rethrown; `on_failure` hears of each job's error as it happens.
  void load_batch(const std::vector<TensorSpec>& specs, const TensorDelivery& deliver,
                  const std::function<void(std::exception_ptr)>& on_failure = {}) {
    BatchCheckpoints open(checkpoints_);
    std::vector<PreparedLoad> prepared(specs.size());
    parallel_for(&pool_, pool_.size() - 1, specs.size(),
                 [&](size_t i) { prepared[i] = prepare(specs[i], std::ref(open)); });
    expect_remote_reads(prepared);
    expect_views_read_together(prepared);
    look_up_mappings(prepared);
    const BatchPlan plan(prepared, {.read_mode = config_.read_mode,
                                    .alignment = config_.alignment,
                                    .read_chunk_bytes = config_.read_chunk_bytes,
                                    .staging_bytes_per_thread = staging_share()});
    const ReadEngineOptions io = read_options();
    parallel_for(&pool_, pool_.size() - 1, plan.jobs().size(), [&](size_t j) {
      const BatchJob& job = plan.jobs()[j];
      try {
        if (job.sweep)
          run_sweep(*job.sweep, prepared, config_.alignment, io, deliver);
        else if (!job.run.empty())
          run_coalesced(job.run, prepared, config_.alignment, io, deliver);
        else
          deliver(job.first_spec, finish(prepared[job.first_spec]));
      } catch (...) {
        if (on_failure) on_failure(std::current_exception());
        throw;
      }
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

  WeightLoaderConfig config_;
  CheckpointCache checkpoints_;
  MappingPolicy mappings_{config_.read_mode, config_.mapped_writes};
  std::mutex device_factories_mutex_;
  std::map<Device, std::shared_ptr<TensorFactory>> device_factories_;
  // Device loads share one pinned ring per device, within the staging budget.
  DeviceUploads device_uploads_{
      {.staging_bytes = config_.max_staging_bytes, .chunk_bytes = config_.read_chunk_bytes}};
  ThreadPool pool_;  // its destructor drains tasks that use the members above
  // Streaming callbacks' threads; joined first, while the pool still runs their nested loads.
  JoinedThreads deliveries_;
};

}  // namespace

std::unique_ptr<WeightLoader> make_default_loader(const WeightLoaderConfig& config) {
  return make_default_loader_with_os(config, real_os());
}

std::unique_ptr<WeightLoader> make_default_loader_with_os(const WeightLoaderConfig& config,
                                                          std::shared_ptr<const Os> os) {
  return std::make_unique<DefaultLoader>(config, std::move(os));
}

}  // namespace ballast
