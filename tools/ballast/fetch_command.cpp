// `ballast fetch SOURCE`: preloads a checkpoint — downloads every file of a remote source into
// its cache (the object cache for URLs and S3) with a progress line on stderr, or reads local
// files ahead into the page cache — then reports what it holds. hf:// sources are fetched as
// `hf download` fetches them: a whole repository's snapshot (--include / --exclude), one file,
// or the GGUF file(s) of a quantization tag, into the Hub cache; the last line of stdout is
// the local path.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <mutex>

#include <fmt/format.h>

#include "cli_common.hpp"
#include "commands.hpp"

namespace ballast::cli {
namespace {

struct FetchOptions {
  SourceOptions source;
  bool quiet = false;
  HubDownloadOptions hub;  // --include / --exclude
};

// Prints download progress: one rewritten line on a terminal, else a line per tenth.
class ProgressPrinter {
 public:
  void operator()(const DownloadProgress& p) {
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    const bool done = p.bytes_done == p.bytes_total;
    const int tenth = p.bytes_total ? static_cast<int>(p.bytes_done * 10 / p.bytes_total) : 10;
    if (p.source != source_) {
      source_ = p.source;
      start_ = now;
      last_tenth_ = -1;
    }
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? static_cast<double>(p.bytes_done) / seconds : 0.0;
    const std::string line =
        fmt::format("{}  {:3d}%  {} / {}  {}/s", p.source,
                    p.bytes_total ? static_cast<int>(p.bytes_done * 100 / p.bytes_total) : 100,
                    human_bytes(p.bytes_done), human_bytes(p.bytes_total),
                    human_bytes(static_cast<uint64_t>(rate)));
    if (terminal_) {
      if (done || now - last_print_ > std::chrono::milliseconds(100)) {
        fmt::print(stderr, "\r\033[K{}{}", line, done ? "\n" : "");
        last_print_ = now;
      }
    } else if (tenth != last_tenth_) {
      fmt::print(stderr, "{}\n", line);
      last_tenth_ = tenth;
    }
  }

 private:
  std::mutex mutex_;
  const bool terminal_ = ::isatty(STDERR_FILENO) != 0;
  std::string source_;
  std::chrono::steady_clock::time_point start_, last_print_;
  int last_tenth_ = -1;
};

void run(const FetchOptions& options) {
  WeightLoaderConfig config = loader_config(options.source);
  auto printer = std::make_shared<ProgressPrinter>();
  if (!options.quiet)
    config.on_download_progress = [printer](const DownloadProgress& p) { (*printer)(p); };
  const WeightSource source = parse_source(options.source);
  if (std::holds_alternative<HuggingFaceSource>(source.location)) {
    const HubDownload done = download_from_hub(source, config, options.hub);
    if (!options.quiet)
      fmt::print("fetched {} (commit {}): {} files, {} ({} bytes){}\n", describe(source),
                 done.commit, done.files.size(), human_bytes(done.bytes), done.bytes,
                 done.from_cache ? ", from the cache" : "");
    fmt::print("{}\n", done.path.string());
    return;
  }
  if (!options.hub.include.empty() || !options.hub.exclude.empty())
    throw Error(ErrorCode::invalid_argument, "--include and --exclude apply to hf:// sources");
  auto loader = create_weight_loader(config);
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
  command->add_flag("-q,--quiet", options->quiet,
                    "no progress output (hf://: stdout is only the local path)");
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
