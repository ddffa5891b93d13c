// `ballast fetch SOURCE`: preloads a checkpoint — downloads every file of a remote source into
// its cache (the object cache for URLs and S3) with progress on stderr, or reads local files
// ahead into the page cache — then reports what it holds. hf:// sources are fetched as
// `hf download` fetches them: a whole repository's snapshot (--include / --exclude), one file,
// or the GGUF file(s) of a quantization tag, into the Hub cache; the last line of stdout is
// the local path.
#include <fmt/format.h>

#include "cli_common.hpp"
#include "commands.hpp"
#include "console.hpp"
#include "wording.hpp"

namespace ballast::cli {
namespace {

struct FetchOptions {
  SourceOptions source;
  HubDownloadOptions hub;  // --include / --exclude
};

void run(const FetchOptions& options) {
  const WeightLoaderConfig config = loader_config(options.source);
  const WeightSource source = parse_source(options.source);
  if (std::holds_alternative<HuggingFaceSource>(source.location)) {
    const HubDownload done = download_from_hub(source, config, options.hub);
    Console::instance().finish();
    if (Console::instance().verbosity() != Verbosity::quiet)
      fmt::print("fetched {} (commit {}): {} files, {} ({} bytes){}\n", describe(source),
                 done.commit, done.files.size(), human_bytes(done.bytes), done.bytes,
                 done.from_cache ? ", from the cache" : "");
    fmt::print("{}\n", done.path.string());
    return;
  }
  if (!options.hub.include.empty() || !options.hub.exclude.empty())
    throw Error(ErrorCode::invalid_argument, "--include and --exclude apply to hf:// sources");
  auto loader = make_weight_loader(config);
  loader->preload(source);
  const WeightMetadata meta = loader->get_metadata(source);
  fmt::print("preloaded {}: {}, {} ({} bytes), {}\n", source_text(options.source),
             counted(meta.tensors.size(), "tensor"), human_bytes(meta.total_size_bytes),
             meta.total_size_bytes, to_string(meta.format));
}

}  // namespace

Runner add_fetch_command(CLI::App& app) {
  auto options = std::make_shared<FetchOptions>();
  auto* command = app.add_subcommand(
      "fetch", "preload a checkpoint: download a remote one into its cache (progress on stderr)");
  add_source_options(*command, options->source, /*raw_dtype_option=*/true);
  command
      ->add_option("--include", options->hub.include,
                   "hf:// repositories: fetch only files matching these globs "
                   "(snapshot_download's allow_patterns; repeat for more)")
      ->allow_extra_args(false);
  command
      ->add_option("--exclude", options->hub.exclude,
                   "hf:// repositories: skip files matching these globs (ignore_patterns)")
      ->allow_extra_args(false);
  return [options] { run(*options); };
}

}  // namespace ballast::cli
