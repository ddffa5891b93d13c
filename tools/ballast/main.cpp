// The `ballast` command-line tool: inspect, hash, load, convert, fetch and check the caches. Exit
// 0 on success, 1 on an error (one line `ballast: error: ...` on stderr), 2 on a usage error.
#include <cstdio>
#include <exception>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "ballast/error.hpp"
#include "ballast/version.hpp"
#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"ballast: load model weights fast, safely and exactly"};
  app.set_version_flag("--version", std::string(ballast::version()));
  app.name("ballast");
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, ballast::cli::Runner>> commands;
  auto remember = [&](ballast::cli::Runner runner) {
    commands.emplace_back(app.get_subcommands({}).back(), std::move(runner));
  };
  remember(ballast::cli::add_inspect_command(app));
  remember(ballast::cli::add_hash_command(app));
  remember(ballast::cli::add_load_command(app));
  remember(ballast::cli::add_convert_command(app));
  remember(ballast::cli::add_fetch_command(app));
  remember(ballast::cli::add_cache_command(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (auto& [command, runner] : commands)
      if (command->parsed()) runner();
  } catch (const ballast::Error& e) {
    fmt::print(stderr, "ballast: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "ballast: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
