// Shared pieces of the ballast subcommands (see cli_common.hpp).
#include "cli_common.hpp"

#include <fnmatch.h>
#include <stdlib.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <variant>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "console.hpp"
#include "usage.hpp"
#include "wording.hpp"

namespace ballast::cli {
namespace {

Shape parse_shape(const std::string& text) {
  Shape shape;
  if (text.empty() || text == "scalar") return shape;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    std::string_view part(text.data() + start,
                          (comma == std::string::npos ? text.size() : comma) - start);
    int64_t d = -1;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), d);
    if (ec != std::errc() || end != part.data() + part.size() || d < 0)
      throw UsageError(fmt::format(
          "--shape: '{}' is not a list of whole numbers 0 or more, such as 4,5,6", text));
    shape.push_back(d);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return shape;
}

const char* const kFormats = "safetensors, pytorch, numpy, onnx, gguf, raw";

// Refuses the options given on the command line that the source would ignore.
void refuse_options_that_do_not_apply(const SourceOptions& options, const WeightSource& source) {
  const CLI::App& command = *options.command;
  auto refuse_if_given = [&](std::initializer_list<const char*> names, const std::string& why) {
    for (const char* name : names)
      if (command.count(name) > 0) throw UsageError(fmt::format("{} {}", name, why));
  };
  const bool is_s3 = std::holds_alternative<S3Source>(source.location);
  const bool is_hub = std::holds_alternative<HuggingFaceSource>(source.location);
  if (std::holds_alternative<FileSource>(source.location))
    refuse_if_given({"--no-cache", "--cache-dir", "--max-cache-size", "--connections", "--timeout",
                     "--retries"},
                    "applies only to remote sources (http(s)://, hf://, s3://); SOURCE is a "
                    "local path");
  if (!is_s3) refuse_if_given({"--s3-endpoint", "--s3-region"}, "applies only to s3:// sources");
  if (is_hub)
    refuse_if_given({"--max-cache-size"},
                    "does not apply to hf:// sources, whose cache is the Hub cache (evicted by "
                    "huggingface_hub's tools)");
}

}  // namespace

void add_source_options(CLI::App& command, SourceOptions& options, bool raw_dtype_option) {
  command
      .add_option("SOURCE", options.source,
                  "a file, folder or *.index.json; http(s)://URL; "
                  "hf://[org/]repo[:QUANT][@rev][/path]; "
                  "s3://bucket/key")
      ->required();
  options.command = &command;
  command.add_option("--format", options.format, fmt::format("force a format ({})", kFormats));
  if (raw_dtype_option)
    command.add_option("--dtype", options.dtype, "with --format raw: the stored dtype");
  command.add_option("--shape", options.shape, "with --format raw: the shape, e.g. 4,5,6");
  command.add_option("--offset", options.offset, "with --format raw: bytes to skip")
      ->check(whole_number(0, UINT64_MAX));
  command.add_option("--mode", options.mode, "read mode: auto, mmap, read, io_uring or direct")
      ->check(CLI::IsMember({"auto", "mmap", "read", "io_uring", "direct"}));
  command.add_option("--threads", options.threads, "worker threads (0 = all cores)")
      ->check(whole_number(0, kMaxNumThreads, "0 = all cores"));
  command.add_flag("--no-cache", options.no_cache,
                   "remote sources: read only the byte ranges needed, download nothing");
  command.add_option("--cache-dir", options.cache_dir,
                     "remote sources: the URL/S3 object cache (default $BALLAST_CACHE or "
                     "~/.cache/ballast); for hf:// the Hub cache (default HF_HUB_CACHE)");
  command
      .add_option("--connections", options.connections,
                  "remote sources: concurrent ranged GETs of one large read (default 8)")
      ->check(whole_number(1, kMaxConcurrentDownloads));
  command
      .add_option("--timeout", options.timeout,
                  "remote sources: seconds a connection or transfer may make no progress "
                  "(default 30; a timed-out request is retried once)")
      ->check(positive_seconds());
  command
      .add_option("--retries", options.retries,
                  "remote sources: retries of a failed request (default 5)")
      ->check(whole_number(0, kMaxDownloadRetries));
  command
      .add_option("--max-cache-size", options.max_cache_size,
                  "remote sources: evict least recently used objects beyond this many bytes")
      ->check(whole_number(0, UINT64_MAX, "0 = unbounded"));
  command.add_option("--s3-endpoint", options.s3_endpoint,
                     "for s3:// sources: the endpoint URL (default: AWS_ENDPOINT_URL_S3, "
                     "AWS_ENDPOINT_URL, the profile's, else AWS)");
  command.add_option("--s3-region", options.s3_region,
                     "for s3:// sources: the region (default: AWS_REGION, AWS_DEFAULT_REGION, "
                     "the profile's, else us-east-1)");
  command.add_flag_callback(
      "--no-sign-request", [] { setenv("AWS_NO_SIGN_REQUEST", "true", 1); },
      "for s3:// sources: send unsigned requests (a public bucket; as AWS_NO_SIGN_REQUEST=true)");
}

WeightSource parse_source(const SourceOptions& options) {
  auto given = [](const std::string& value) {
    return value.empty() ? std::nullopt : std::optional<std::string>(value);
  };
  // The S3 options go to the parser only for an s3:// SOURCE; elsewhere they are refused below.
  const bool s3 = options.source.starts_with("s3://");
  WeightSource source;
  try {
    source = parse_source_uri(options.source, s3 ? given(options.s3_region) : std::nullopt,
                              s3 ? given(options.s3_endpoint) : std::nullopt);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::invalid_argument) throw;
    throw UsageError(fmt::format("SOURCE '{}': {}", options.source, e.message()));
  }
  if (!options.format.empty()) {
    source.format = parse_format(options.format);
    if (source.format->kind == WeightFormat::Kind::custom)
      throw UsageError(
          fmt::format("--format: unknown format '{}'; valid: {}", options.format, kFormats));
  }
  const bool raw = source.format && source.format->kind == WeightFormat::Kind::raw;
  if (!options.command) throw std::logic_error("parse_source before add_source_options");
  const CLI::App& command = *options.command;
  if (raw) {
    if (options.dtype.empty()) throw UsageError("--format raw needs --dtype (the stored dtype)");
    source.raw_layout = RawLayout{dtype_option("--dtype", options.dtype),
                                  parse_shape(options.shape), options.offset};
  } else {
    for (const char* name : {"--shape", "--offset"})
      if (command.count(name) > 0)
        throw UsageError(fmt::format("{} applies only with --format raw", name));
    // Where --dtype is only the stored dtype of a raw file (inspect, fetch), it casts nothing.
    if (command.count("--dtype") > 0 && !options.dtype_casts)
      throw UsageError(fmt::format("--dtype applies only with --format raw here ({} does not cast)",
                                   command.get_name()));
  }
  refuse_options_that_do_not_apply(options, source);
  // --cache-dir is the Hub cache for hf:// (as `hf download --cache-dir`).
  if (auto* hub = std::get_if<HuggingFaceSource>(&source.location);
      hub && !options.cache_dir.empty())
    hub->cache_dir = options.cache_dir;
  return source;
}

std::string source_text(const SourceOptions& options) { return describe(parse_source(options)); }

WeightLoaderConfig loader_config(const SourceOptions& options) {
  WeightLoaderConfig config;
  config.num_threads = options.threads;
  config.enable_caching = !options.no_cache;
  config.cache_dir = options.cache_dir;
  config.max_cache_size = options.max_cache_size;
  config.max_concurrent_downloads = options.connections;
  config.download_timeout_seconds = options.timeout;
  config.download_retries = options.retries;
  config.read_mode = ReadMode::automatic;
  for (ReadMode mode : {ReadMode::mmap, ReadMode::read, ReadMode::io_uring, ReadMode::direct})
    if (options.mode == read_mode_name(mode)) config.read_mode = mode;
  config.on_download_progress = Console::instance().download_progress();
  const std::string threads =
      options.threads > 0 ? std::to_string(options.threads) : std::string("all cores");
  if (options.source.find("://") == std::string::npos)
    Console::instance().note(fmt::format("read mode {}, threads: {}", options.mode, threads));
  else
    Console::instance().note(fmt::format(
        "read mode {}, threads: {}; {}, {} connections, timeout {} s, {} retries", options.mode,
        threads,
        options.no_cache
            ? "ranged reads, no cache"
            : "cached in " + (options.cache_dir.empty() ? std::string("the default cache")
                                                        : options.cache_dir),
        options.connections, options.timeout, options.retries));
  return config;
}

std::vector<Transformation> load_steps(const SourceOptions& options, const std::string& transform,
                                       bool raw) {
  std::vector<Transformation> steps;
  try {
    steps = parse_transformations(transform);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::invalid_argument) throw;
    throw UsageError(fmt::format("--transform: {}", e.message()));
  }
  if (!raw && !options.dtype.empty()) steps.push_back(Cast{dtype_option("--dtype", options.dtype)});
  return steps;
}

void add_dtype_option(CLI::App& command, SourceOptions& options) {
  options.dtype_casts = true;
  command.add_option("--dtype", options.dtype,
                     "cast every tensor to this dtype (with --format raw: the stored dtype)");
}

void note_metadata(const std::string& source, const WeightMetadata& meta) {
  Console::instance().note(fmt::format("{}: {}, {}, {}", source, to_string(meta.format),
                                       counted(meta.tensors.size(), "tensor"),
                                       human_bytes(meta.total_size_bytes)));
}

void download_first_when_reading_all(WeightLoader& loader, const WeightSource& source,
                                     const SourceOptions& options, size_t selected, size_t total) {
  const bool local = std::holds_alternative<FileSource>(source.location) ||
                     std::holds_alternative<MemorySource>(source.location);
  if (local || options.no_cache || selected != total) return;
  loader.preload(source);
}

std::vector<std::string> select_tensors(const std::vector<std::string>& all,
                                        const std::vector<std::string>& patterns) {
  if (patterns.empty()) return all;
  std::vector<std::string> out;
  for (const auto& p : patterns)
    if (p.find_first_of("*?[") == std::string::npos &&
        std::find(all.begin(), all.end(), p) == all.end())
      out.push_back(p);
  for (const auto& name : all)
    for (const auto& p : patterns)
      if (name == p || fnmatch(p.c_str(), name.c_str(), 0) == 0) {
        out.push_back(name);
        break;
      }
  if (out.empty())
    throw Error(ErrorCode::not_found,
                fmt::format("no tensor matches {}", fmt::join(patterns, ", ")));
  return out;
}

void add_tensor_option(CLI::App& command, std::vector<std::string>& patterns) {
  command
      .add_option("--tensor", patterns,
                  "a tensor name or glob pattern; repeat the flag for more (--tensor a --tensor "
                  "'b.*')")
      ->allow_extra_args(false);
}

std::vector<TensorRef> tensors_of(const TensorRef& loaded) {
  if (loaded->parts().empty()) return {loaded};
  std::vector<TensorRef> parts;
  for (const auto& [name, part] : loaded->parts()) parts.push_back(part);
  return parts;
}

std::string shape_text(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string json_text(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace ballast::cli
