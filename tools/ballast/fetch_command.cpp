// `ballast fetch SOURCE`: preloads a checkpoint — downloads every file of a remote source into
// its cache (the object cache for URLs and S3, the Hub cache for hf://) with a progress line on
// stderr, or reads local files ahead into the page cache — then reports what it holds.
#include <memory>

#include <fmt/format.h>

#include "cli_common.hpp"
#include "commands.hpp"
#include "progress.hpp"

namespace ballast::cli {
namespace {

struct FetchOptions {
  SourceOptions source;
  bool quiet = false;
};

void run(const FetchOptions& options) {
  WeightLoaderConfig config = loader_config(options.source);
  auto printer = std::make_shared<ProgressPrinter>();
  if (!options.quiet)
    config.on_download_progress = [printer](const DownloadProgress& p) { (*printer)(p); };
  auto loader = create_weight_loader(config);
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
  command->add_flag("-q,--quiet", options->quiet, "no progress output");
  return [options] { run(*options); };
}

}  // namespace ballast::cli
