// `ballast load SOURCE [--mode auto|mmap|read|io_uring|direct] [--threads N] [--dtype D]
// [--transform LIST] [--no-touch] [--repeat N] [--arena] [--json]`: loads every tensor and
// reports bytes, seconds, GB/s and peak memory. Zero-copy (mapped) tensors have every page
// touched, so the figure includes bringing the bytes into memory, as a real load would (unless
// --no-touch, which times opening and mapping alone). Bytes are those of the output: every
// part of a quantized bundle. --arena places the tensors in one block of memory faulted in
// before the timing starts (through make_arena_tensor_factory), as an engine with preallocated host
// memory loads: the figure is then the reads and copies without first-touch page faults.
// `--cooperative [--shard] [--shard-dim D] [--round-bytes N] [--device cpu|cuda]`, under mpirun,
// splits the reads among the ranks and exchanges the parts (cooperative_load.hpp).
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "commands.hpp"
#include "console.hpp"
#include "cooperative_load.hpp"
#include "usage.hpp"
#include "wording.hpp"

namespace ballast::cli {
namespace {

struct LoadOptions {
  SourceOptions source;
  std::vector<std::string> tensors;
  std::string transform;
  bool json = false;
  bool no_touch = false;
  bool arena = false;
  int repeat = 1;
  bool cooperative = false;
  CooperativeLoadOptions cooperation;  // its source, tensors, transform and json come from above
};

// Host memory for --arena: one anonymous mapping, every page written once up front.
class ResidentBlock {
 public:
  explicit ResidentBlock(uint64_t size) : size_(std::max<uint64_t>(size, 1)) {
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      throw Error(ErrorCode::limit_exceeded,
                  fmt::format("cannot map an arena of {}", human_bytes(size_)));
    data_ = static_cast<std::byte*>(p);
    madvise(data_, size_, MADV_HUGEPAGE);
    std::memset(data_, 0, size_);
  }
  ~ResidentBlock() { munmap(data_, size_); }
  ResidentBlock(const ResidentBlock&) = delete;
  ResidentBlock& operator=(const ResidentBlock&) = delete;

  std::span<std::byte> bytes() const { return {data_, size_}; }

 private:
  uint64_t size_;
  std::byte* data_ = nullptr;
};

// Reads one byte of every page of a mapped tensor, so the load includes the page faults.
uint64_t touch_pages(const Tensor& t) {
  const auto bytes = t.bytes();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  uint64_t sum = 0;
  for (size_t i = 0; i < bytes.size(); i += page) sum += static_cast<uint8_t>(bytes[i]);
  return sum;
}

uint64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

// One whole load with a new loader: metadata, then every selected tensor in one batch.
struct LoadResult {
  WeightFormat format;
  size_t tensors = 0;
  uint64_t bytes = 0, zero_copy = 0, checksum = 0;
  double seconds = 0;
};

std::vector<std::string> selected_names(const WeightMetadata& meta, const LoadOptions& options) {
  std::vector<std::string> names;
  names.reserve(meta.tensors.size());
  for (const auto& [name, info] : meta.tensors) names.push_back(name);
  return select_tensors(names, options.tensors);
}

// Room for every selected tensor as loaded (cast to --dtype when given; --arena excludes
// --transform), each at its own aligned offset, with a page of slack per tensor for the parts
// of quantized bundles.
uint64_t arena_bytes_needed(const LoadOptions& options, const WeightLoaderConfig& config) {
  const WeightSource source = parse_source(options.source);
  const WeightMetadata meta = make_weight_loader(config)->get_metadata(source);
  const bool raw = source.format && source.format->kind == WeightFormat::Kind::raw;
  const std::optional<DType> cast =
      raw || options.source.dtype.empty() ? std::nullopt : parse_dtype(options.source.dtype);
  uint64_t total = 0;
  for (const auto& name : selected_names(meta, options)) {
    auto found = meta.tensors.find(name);
    if (found == meta.tensors.end()) continue;  // the load names the closest tensors
    const TensorInfo& info = found->second;
    uint64_t numel = 1;
    for (int64_t d : info.shape) numel *= static_cast<uint64_t>(d);
    const uint64_t out = cast ? dtype_bytes_for(*cast, numel).value_or(info.nbytes) : info.nbytes;
    total += out + config.alignment + 4096;
  }
  return total;
}

LoadResult load_once(const LoadOptions& options, const WeightLoaderConfig& config) {
  auto loader = make_weight_loader(config);
  WeightSource source = parse_source(options.source);
  const auto start = std::chrono::steady_clock::now();
  WeightMetadata meta = loader->get_metadata(source);
  note_metadata(source_text(options.source), meta);
  const std::vector<std::string> names = selected_names(meta, options);
  const bool raw = source.format && source.format->kind == WeightFormat::Kind::raw;
  const auto steps = load_steps(options.source, options.transform, raw);

  std::vector<TensorSpec> specs;
  specs.reserve(names.size());
  for (const auto& name : names)
    specs.push_back(TensorSpec{.name = name, .source = source, .transformations = steps});
  const size_t count = specs.size();
  // Tensors loaded, on a terminal only (a log needs no count of a load that takes seconds).
  ProgressDisplay* progress = options.json ? nullptr : Console::instance().terminal_progress();
  std::vector<TensorRef> loaded;
  LoadResult result{.format = meta.format};
  // One batch, as an engine would load: tensors arrive as they complete (one call at a time).
  loaded.reserve(count);
  loader->load_tensors_streaming(std::move(specs), [&](const std::string&, TensorRef tensor) {
    loaded.push_back(std::move(tensor));
    for (const TensorRef& part : tensors_of(loaded.back())) {
      const Tensor& t = *part;
      result.bytes += t.nbytes();
      if (t.is_zero_copy()) {
        result.zero_copy += t.nbytes();
        if (!options.no_touch) result.checksum += touch_pages(t);
      }
    }
    if (progress) progress->update("loading", loaded.size(), count, ProgressDisplay::Unit::tensors);
  });
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.tensors = loaded.size();
  return result;  // the tensors are released here, before any next repetition
}

void run(const LoadOptions& options) {
  if (options.cooperative) {
    CooperativeLoadOptions cooperative = options.cooperation;
    cooperative.source = options.source;
    cooperative.tensors = options.tensors;
    cooperative.transform = options.transform;
    cooperative.json = options.json;
    return run_cooperative_load(cooperative);
  }
  WeightLoaderConfig config = loader_config(options.source);
  std::optional<ResidentBlock> arena;
  if (options.arena) arena.emplace(arena_bytes_needed(options, config));
  // Each load gets a new factory over the same block: the previous load's tensors are gone.
  auto one_load = [&] {
    if (arena) config.factories = {make_arena_tensor_factory(arena->bytes())};
    return load_once(options, config);
  };
  const LoadResult r = one_load();
  std::vector<double> each{r.seconds};
  for (int i = 1; i < options.repeat; ++i) each.push_back(one_load().seconds);
  std::vector<double> sorted = each;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  const double seconds = sorted[sorted.size() / 2];  // the median repetition
  const double gbps = seconds > 0 ? static_cast<double>(r.bytes) / seconds / 1e9 : 0.0;
  const unsigned threads = config.num_threads > 0
                               ? static_cast<unsigned>(config.num_threads)
                               : std::max(1u, std::thread::hardware_concurrency());
  if (options.json) {
    nlohmann::json out = {{"source", source_text(options.source)},
                          {"format", to_string(r.format)},
                          {"mode", options.source.mode},
                          {"threads", threads},
                          {"tensors", r.tensors},
                          {"bytes", r.bytes},
                          {"zero_copy_bytes", r.zero_copy},
                          {"arena_bytes", arena ? arena->bytes().size() : 0},
                          {"seconds", seconds},
                          {"seconds_each", each},
                          {"gb_per_s", gbps},
                          {"peak_rss_bytes", peak_rss_bytes()},
                          {"touch_checksum", r.checksum}};
    std::cout << json_text(out) << "\n";
    return;
  }
  fmt::print("loaded {}, {} ({} bytes, {} zero-copy) in {:.3f} s: {:.2f} GB/s\n",
             counted(r.tensors, "tensor"), human_bytes(r.bytes), r.bytes, human_bytes(r.zero_copy),
             seconds, gbps);
  if (each.size() > 1)
    fmt::print("median of {} loads, which took {:.3f} s\n", each.size(), fmt::join(each, ", "));
  fmt::print("mode {}, {} threads, peak memory {}\n", options.source.mode, threads,
             human_bytes(peak_rss_bytes()));
}

}  // namespace

Runner add_load_command(CLI::App& app) {
  auto options = std::make_shared<LoadOptions>();
  auto* cmd = app.add_subcommand("load", "Load every tensor and report throughput and peak memory");
  add_source_options(*cmd, options->source, false);
  add_dtype_option(*cmd, options->source);
  add_tensor_option(*cmd, options->tensors);
  auto* transform = cmd->add_option("--transform", options->transform,
                                    "comma-separated steps applied to every tensor");
  cmd->add_flag("--json", options->json, "print one JSON object");
  cmd->add_flag("--no-touch", options->no_touch,
                "do not touch the pages of mapped tensors (times opening and mapping alone)");
  cmd->add_option("--repeat", options->repeat,
                  "load N times in this process, each with a new loader, and report the median "
                  "(later loads reuse memory the process already faulted in)")
      ->check(whole_number(1, 1000000));
  cmd->add_flag("--arena", options->arena,
                "place the tensors in one block of memory faulted in before timing starts (as "
                "an engine with preallocated host memory; no first-touch page faults)")
      ->excludes(transform);
  auto* cooperative = cmd->add_flag(
      "--cooperative", options->cooperative,
      "under mpirun: each rank reads 1/N of the checkpoint and the ranks exchange the parts "
      "over MPI; every rank reports what it read and the tensors it ends with");
  auto& co = options->cooperation;
  cmd->add_flag("--shard", co.shard,
                "with --cooperative: each rank keeps its tensor-parallel shard "
                "(shard:RANK/WORLD:DIM, rank and world from MPI; tensors with too few "
                "dimensions whole)")
      ->needs(cooperative);
  cmd->add_option("--shard-dim", co.shard_dim, "the dimension --shard splits (default 0)")
      ->needs(cooperative);
  cmd->add_option("--device", co.device,
                  "with --cooperative: cpu (default) or cuda: each rank loads into its GPU (one "
                  "GPU per rank) and the ranks exchange over NCCL")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->needs(cooperative);
  cmd->add_option("--round-bytes", co.round_bytes,
                  "with --cooperative: stored bytes exchanged per round (default 256 MiB): "
                  "host memory stays within the result plus one round")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->needs(cooperative);
  cooperative->excludes("--arena")->excludes("--repeat")->excludes("--no-touch");
  return [options] { run(*options); };
}

}  // namespace ballast::cli
