// `ballast fetch SOURCE`: preloads a checkpoint — downloads every file of a remote source into
// its cache (the object cache for URLs and S3, the Hub cache for hf://) with a progress line on
// stderr, or reads local files ahead into the page cache — then reports what it holds.
#include <fmt/format.h>

#include "cli_common.hpp"
#include "commands.hpp"

namespace ballast::cli {
namespace {

struct FetchOptions {
  SourceOptions source;
};

void run(const FetchOptions& options) {
  auto loader = create_weight_loader(loader_config(options.source));
  const WeightSource source = parse_source(options.source);
  loader->preload(source);
  const WeightMetadata meta = loader->get_metadata(source);
  fmt::print("preloaded {}: {} tensors, {} ({} bytes), {}\n", source_text(options.source),
             meta.tensors.size(), human_bytes(meta.total_size_bytes), meta.total_size_bytes,
             to_string(meta.format));
}

}  // namespace

Runner add_fetch_command(CLI::App& app) {
  auto options = std::make_shared<FetchOptions>();
  auto* command = app.add_subcommand(
      "fetch", "preload a checkpoint: download a remote one into its cache (progress on stderr)");
  add_source_options(*command, options->source, /*raw_dtype_option=*/true);
  return [options] { run(*options); };
}

}  // namespace ballast::cli
