// `ballast cache verify [--cache-dir DIR] [--hub-cache DIR] [--delete] [--json]`: hashes every
// blob of ballast's object cache and of the Hub cache against the digest it is recorded or
// named by, prints one line per blob (or JSON), and fails when any is corrupt.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/cache.hpp"
#include "ballast/error.hpp"
#include "cli_common.hpp"
#include "commands.hpp"

namespace ballast::cli {
namespace {

struct CacheVerifyCommand {
  CacheVerifyOptions options;
  bool json = false;
};

std::string_view state_name(CachedBlobCheck::State state) {
  switch (state) {
    case CachedBlobCheck::State::ok: return "ok";
    case CachedBlobCheck::State::corrupt: return "corrupt";
    case CachedBlobCheck::State::unverifiable: return "unverifiable";
  }
  return "unknown";
}

void run(const CacheVerifyCommand& command) {
  const std::vector<CachedBlobCheck> checks = verify_caches(command.options);
  size_t corrupt = 0;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : checks) {
    corrupt += c.state == CachedBlobCheck::State::corrupt;
    if (command.json)
      out.push_back({{"blob", c.blob.string()},
                     {"cache", c.cache},
                     {"state", state_name(c.state)},
                     {"size", c.size},
                     {"expected", c.expected},
                     {"actual", c.actual},
                     {"removed", c.removed}});
    else
      fmt::print("{:<12}  {:>10}  {}{}\n", state_name(c.state), human_bytes(c.size),
                 c.blob.string(), c.removed ? "  (removed)" : "");
  }
  if (command.json) std::cout << json_text(out) << "\n";
  if (corrupt > 0)
    throw Error(ErrorCode::integrity,
                fmt::format("{} of {} cached blobs are corrupt{}", corrupt, checks.size(),
                            command.options.remove_corrupt
                                ? " (removed: their next use downloads them again)"
                                : "; --delete removes them"));
}

}  // namespace

Runner add_cache_command(CLI::App& app) {
  auto command = std::make_shared<CacheVerifyCommand>();
  auto* cache = app.add_subcommand("cache", "Check ballast's caches");
  cache->require_subcommand(1);
  auto* verify = cache->add_subcommand(
      "verify", "Hash every cached blob (object cache and Hub cache) against its recorded digest");
  verify->add_option("--cache-dir", command->options.cache_dir,
                     "ballast's cache (default $BALLAST_CACHE or ~/.cache/ballast)");
  verify->add_option("--hub-cache", command->options.hub_cache,
                     "the Hub cache (default $HF_HUB_CACHE, $HF_HOME/hub)");
  verify->add_flag("--delete", command->options.remove_corrupt,
                   "remove corrupt blobs so that their next use downloads them again");
  verify->add_flag("--json", command->json, "print one JSON array");
  return [command, verify] {
    if (verify->parsed()) run(*command);
  };
}

}  // namespace ballast::cli
