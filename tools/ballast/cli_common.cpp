// Shared pieces of the ballast subcommands (see cli_common.hpp).
#include "cli_common.hpp"

#include <fnmatch.h>

#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

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
      throw Error(ErrorCode::invalid_argument, fmt::format("bad --shape '{}'", text));
    shape.push_back(d);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return shape;
}

}  // namespace

void add_source_options(CLI::App& command, SourceOptions& options, bool raw_dtype_option) {
  command
      .add_option("SOURCE", options.source,
                  "a file, folder or *.index.json; http(s)://URL; "
                  "hf://[org/]repo[:QUANT][@rev][/path]; "
                  "s3://bucket/key")
      ->required();
  command.add_option("--format", options.format,
                     "force a format (safetensors, pytorch, numpy, onnx, gguf, raw)");
  if (raw_dtype_option)
    command.add_option("--dtype", options.dtype, "with --format raw: the stored dtype");
  command.add_option("--shape", options.shape, "with --format raw: the shape, e.g. 4,5,6");
  command.add_option("--offset", options.offset, "with --format raw: bytes to skip");
  command.add_option("--mode", options.mode, "read mode: auto, mmap, read, io_uring or direct")
      ->check(CLI::IsMember({"auto", "mmap", "read", "io_uring", "direct"}));
  command.add_option("--threads", options.threads, "worker threads (0 = all cores)")
      ->check(CLI::NonNegativeNumber);
  command.add_flag("--no-cache", options.no_cache,
                   "remote sources: read only the byte ranges needed, download nothing");
  command.add_option("--cache-dir", options.cache_dir,
                     "remote sources: the URL/S3 object cache (default $BALLAST_CACHE or "
                     "~/.cache/ballast); for hf:// the Hub cache (default HF_HUB_CACHE)");
  command
      .add_option("--connections", options.connections,
                  "remote sources: concurrent ranged GETs of one large read (default 8)")
      ->check(CLI::PositiveNumber);
  command
      .add_option("--timeout", options.timeout,
                  "remote sources: seconds a connection or transfer may make no progress "
                  "(default 30; a timed-out request is retried once)")
      ->check(CLI::PositiveNumber);
  command
      .add_option("--retries", options.retries,
                  "remote sources: retries of a failed request (default 5)")
      ->check(CLI::NonNegativeNumber);
  command.add_option("--max-cache-size", options.max_cache_size,
                     "remote sources: evict least recently used objects beyond this many bytes");
  command.add_option("--s3-endpoint", options.s3_endpoint,
                     "for s3:// sources: the endpoint URL (default: AWS_ENDPOINT_URL_S3, "
                     "AWS_ENDPOINT_URL, the profile's, else AWS)");
  command.add_option("--s3-region", options.s3_region,
                     "for s3:// sources: the region (default: AWS_REGION, AWS_DEFAULT_REGION, "
                     "the profile's, else us-east-1)");
}

WeightSource parse_source(const SourceOptions& options) {
  auto given = [](const std::string& value) {
    return value.empty() ? std::nullopt : std::optional<std::string>(value);
  };
  WeightSource source =
      parse_source_uri(options.source, given(options.s3_region), given(options.s3_endpoint));
  // --cache-dir is the Hub cache for hf:// (as `hf download --cache-dir`).
  if (auto* hub = std::get_if<HuggingFaceSource>(&source.location);
      hub && !options.cache_dir.empty())
    hub->cache_dir = options.cache_dir;
  if (!options.format.empty()) source.format = parse_format(options.format);
  const bool raw = source.format && source.format->kind == WeightFormat::Kind::raw;
  if (raw) {
    if (options.dtype.empty())
      throw Error(ErrorCode::invalid_argument, "--format raw needs --dtype (the stored dtype)");
    auto dtype = parse_dtype(options.dtype);
    if (!dtype)
      throw Error(ErrorCode::invalid_argument, fmt::format("unknown dtype '{}'", options.dtype));
    source.raw_layout = RawLayout{*dtype, parse_shape(options.shape), options.offset};
  } else if (!options.shape.empty() || options.offset != 0) {
    throw Error(ErrorCode::invalid_argument, "--shape and --offset apply only with --format raw");
  }
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
  return config;
}

std::vector<Transformation> load_steps(const SourceOptions& options, const std::string& transform,
                                       bool raw) {
  auto steps = parse_transformations(transform);
  if (!raw && !options.dtype.empty()) {
    auto dtype = parse_dtype(options.dtype);
    if (!dtype)
      throw Error(ErrorCode::invalid_argument, fmt::format("unknown dtype '{}'", options.dtype));
    steps.push_back(Cast{*dtype});
  }
  return steps;
}

void add_dtype_option(CLI::App& command, SourceOptions& options) {
  command.add_option("--dtype", options.dtype,
                     "cast every tensor to this dtype (with --format raw: the stored dtype)");
}

std::vector<std::string> select_tensors(const std::vector<std::string>& all,
                                        const std::vector<std::string>& patterns) {
  if (patterns.empty()) return all;
  std::vector<std::string> out;
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
