// `ballast load SOURCE [--mode auto|mmap|read|io_uring|direct] [--threads N] [--dtype D]
// [--transform LIST] [--no-touch] [--json]`: loads every tensor and
// reports bytes, seconds, GB/s and peak memory. Zero-copy (mapped) tensors have every page
// touched, so the figure includes bringing the bytes into memory, as a real load would (unless
// --no-touch, which times opening and mapping alone). Bytes are those of the output: every
// part of a quantized bundle.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "commands.hpp"

namespace ballast::cli {
namespace {

struct LoadOptions {
  SourceOptions source;
  std::vector<std::string> tensors;
  std::string transform;
  bool json = false;
  bool no_touch = false;
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

void draw_progress(size_t done, size_t total, uint64_t bytes) {
  constexpr int kWidth = 40;
  int filled = total ? static_cast<int>(kWidth * done / total) : kWidth;
  fmt::print(stderr, "\r[{:=<{}}{:<{}}] {}/{} tensors, {}", "", filled, "", kWidth - filled, done,
             total, human_bytes(bytes));
  if (done == total) fmt::print(stderr, "\n");
}

void run(const LoadOptions& options) {
  WeightLoaderConfig config = loader_config(options.source);
  auto loader = create_weight_loader(config);
  WeightSource source = parse_source(options.source);
  const auto start = std::chrono::steady_clock::now();
  WeightMetadata meta = loader->get_metadata(source);
  std::vector<std::string> names;
  for (const auto& [name, info] : meta.tensors) names.push_back(name);
  names = select_tensors(names, options.tensors);
  const bool raw = source.format && source.format->kind == WeightFormat::Kind::raw;
  const auto steps = load_steps(options.source, options.transform, raw);

  std::vector<TensorSpec> specs;
  for (const auto& name : names)
    specs.push_back(TensorSpec{.name = name, .source = source, .transformations = steps});
  const bool progress = isatty(STDERR_FILENO) && !options.json;
  std::vector<TensorRef> loaded;
  uint64_t bytes = 0, zero_copy = 0, checksum = 0;
  // One batch, as an engine would load: tensors arrive as they complete (one call at a time).
  loader->load_tensors_streaming(specs, [&](const std::string&, TensorRef tensor) {
    loaded.push_back(std::move(tensor));
    for (const TensorRef& part : tensors_of(loaded.back())) {
      const Tensor& t = *part;
      bytes += t.nbytes();
      if (t.is_zero_copy()) {
        zero_copy += t.nbytes();
        if (!options.no_touch) checksum += touch_pages(t);
      }
    }
    if (progress) draw_progress(loaded.size(), specs.size(), bytes);
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double gbps = seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
  const unsigned threads = config.num_threads > 0
                               ? static_cast<unsigned>(config.num_threads)
                               : std::max(1u, std::thread::hardware_concurrency());
  if (options.json) {
    nlohmann::json out = {{"source", options.source.source},
                          {"format", to_string(meta.format)},
                          {"mode", options.source.mode},
                          {"threads", threads},
                          {"tensors", loaded.size()},
                          {"bytes", bytes},
                          {"zero_copy_bytes", zero_copy},
                          {"seconds", seconds},
                          {"gb_per_s", gbps},
                          {"peak_rss_bytes", peak_rss_bytes()},
                          {"touch_checksum", checksum}};
    std::cout << out.dump(2) << "\n";
    return;
  }
  fmt::print("loaded {} tensors, {} ({} bytes, {} zero-copy) in {:.3f} s: {:.2f} GB/s\n",
             loaded.size(), human_bytes(bytes), bytes, human_bytes(zero_copy), seconds, gbps);
  fmt::print("mode {}, {} threads, peak memory {}\n", options.source.mode, threads,
             human_bytes(peak_rss_bytes()));
}

}  // namespace

Runner add_load_command(CLI::App& app) {
  auto options = std::make_shared<LoadOptions>();
  auto* cmd = app.add_subcommand("load", "Load every tensor and report throughput and peak memory");
  add_source_options(*cmd, options->source, false);
  add_dtype_option(*cmd, options->source);
  cmd->add_option("--tensor", options->tensors, "tensor name or glob pattern (repeatable)");
  cmd->add_option("--transform", options->transform,
                  "comma-separated steps applied to every tensor");
  cmd->add_flag("--json", options->json, "print one JSON object");
  cmd->add_flag("--no-touch", options->no_touch,
                "do not touch the pages of mapped tensors (times opening and mapping alone)");
  return [options] { run(*options); };
}

}  // namespace ballast::cli
