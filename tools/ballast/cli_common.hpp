// Pieces shared by the ballast subcommands: turning a SOURCE argument and its options into a
// WeightSource, selecting tensors by name pattern, and formatting shapes and sizes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "ballast/ballast.hpp"

namespace ballast::cli {

// Options every command that reads a checkpoint accepts.
struct SourceOptions {
  std::string source;
  std::string format;   // empty: detect
  std::string dtype;    // with --format raw: the stored dtype
  std::string shape;    // with --format raw: "a,b,c"
  uint64_t offset = 0;  // with --format raw
  std::string mode = "auto";
  int threads = 0;
  bool no_cache = false;        // remote sources: read by ranges, download nothing
  std::string cache_dir;        // remote sources: ballast's object cache (URL, S3)
  uint64_t max_cache_size = 0;  // bytes; 0 = unbounded
  int connections = 8;          // remote sources: concurrent ranges of one large read
  double timeout = 30;          // remote sources: seconds without progress (and to connect)
  int retries = 5;              // remote sources: retries of a failed request
  std::string s3_endpoint;      // for s3:// sources; empty: from the environment
  std::string s3_region;        // for s3:// sources; empty: from the environment
  bool dtype_casts = false;     // --dtype casts (add_dtype_option), not only raw's stored dtype
  CLI::App* command = nullptr;  // set by add_source_options: which options were given
};

void add_source_options(CLI::App& command, SourceOptions& options, bool raw_dtype_option);

// "path", "http(s)://...", "hf://org/repo[@rev][/path]", "s3://bucket/key". A SOURCE or an
// option that is malformed, or that does not apply to the source, is a UsageError.
WeightSource parse_source(const SourceOptions& options);
// The source as output may show it: a URL without user-info or query (ballast::describe).
std::string source_text(const SourceOptions& options);
// The loader's settings; downloads report to the console's progress display.
WeightLoaderConfig loader_config(const SourceOptions& options);
// The --transform LIST steps, then a cast to --dtype unless the source is raw (where --dtype
// names the stored dtype).
std::vector<Transformation> load_steps(const SourceOptions& options, const std::string& transform,
                                       bool raw);
// Adds --dtype: a cast before hashing or writing (with --format raw: the stored dtype).
void add_dtype_option(CLI::App& command, SourceOptions& options);

// With -v: the checkpoint's format, tensor count and size.
void note_metadata(const std::string& source, const WeightMetadata& meta);

// Before a command reads every tensor of a remote checkpoint with caching on: downloads it
// whole into the cache first, as `fetch` does. Read tensor by tensor, the first half of each
// file would be fetched by ranges before the loader's cache-fill rule downloads it (1.5x).
void download_first_when_reading_all(WeightLoader& loader, const WeightSource& source,
                                     const SourceOptions& options, size_t selected, size_t total);

// Names from `all` matching any of the glob patterns (all when there are none), in order. A
// pattern without glob characters that names no tensor comes first, as it is: loading it
// fails with the library's "no such tensor" error, which names the closest tensors.
std::vector<std::string> select_tensors(const std::vector<std::string>& all,
                                        const std::vector<std::string>& patterns);
// Adds --tensor NAME: one name or glob pattern per flag, repeatable.
void add_tensor_option(CLI::App& command, std::vector<std::string>& patterns);

// The tensors a load produced: a quantized bundle's parts ("<tensor>.<part>"), else the tensor.
std::vector<TensorRef> tensors_of(const TensorRef& loaded);

std::string shape_text(const Shape& shape);
std::string human_bytes(uint64_t bytes);
// JSON output; strings from a file (tensor names, metadata) that are not UTF-8 are printed
// with U+FFFD in place of the bad bytes.
std::string json_text(const nlohmann::json& value, int indent = 2);

}  // namespace ballast::cli
