// The `ballast` command-line tool: inspect, hash, load, convert, fetch, check the caches, and
// `help CMD`. Exit 0 on success; 1 on an error (`ballast: error: ...` on stderr); 2 on a usage
// error, whether CLI11 finds it while parsing or a command while checking its arguments (the
// message, then a hint to `ballast help CMD`).
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "ballast/error.hpp"
#include "ballast/version.hpp"
#include "commands.hpp"
#include "console.hpp"
#include "cooperative_load.hpp"
#include "usage.hpp"

namespace {

using ballast::cli::Console;

// The command the user named ("hash", "cache verify"), as far as parsing got; "" for none.
std::string command_path(const CLI::App& app) {
  std::string path;
  const CLI::App* at = &app;
  while (true) {
    const auto parsed = at->get_subcommands();
    if (parsed.empty()) return path;
    at = parsed.front();
    path += (path.empty() ? "" : " ") + at->get_name();
  }
}

int usage_error(const std::string& message, const std::string& command) {
  Console::instance().finish();
  fmt::print(stderr, "ballast: error: {}\nRun 'ballast help{}' for {}.\n", message,
             command.empty() || command == "help" ? "" : " " + command,
             command.empty() || command == "help" ? "the commands" : "its options");
  return 2;
}

// `ballast help [COMMAND...]`: the help of the app or of a (nested) command, on stdout.
ballast::cli::Runner add_help_command(CLI::App& app, std::vector<std::string>& topic) {
  auto* help = app.add_subcommand("help", "Show the options of a command: ballast help CMD");
  help->add_option("COMMAND", topic, "a command, e.g. hash or cache verify");
  return [&app, &topic] {
    const CLI::App* at = &app;
    std::string prefix;  // "ballast cache" for "cache verify", as --help's usage line reads
    for (const auto& name : topic) {
      const CLI::App* next = nullptr;
      for (const CLI::App* sub : at->get_subcommands({}))
        if (sub->get_name() == name) next = sub;
      if (!next)
        throw ballast::cli::UsageError(
            fmt::format("no command '{}'", fmt::join(topic.begin(), topic.end(), " ")));
      prefix += (prefix.empty() ? "" : " ") + at->get_name();
      at = next;
    }
    // The formatter itself: App::help() of the root would show the selected `help` command.
    const std::string name = prefix.empty() ? at->get_name() : prefix + " " + at->get_name();
    fmt::print("{}", at->get_formatter()->make_help(at, name, CLI::AppFormatMode::Normal));
  };
}

}  // namespace

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
  // -q and -v on every command that does something (for `cache`, on `cache verify`).
  for (auto& [command, runner] : commands) {
    auto nested = command->get_subcommands({});
    if (nested.empty()) nested = {command};
    for (CLI::App* leaf : nested) Console::instance().add_flags(*leaf);
  }
  std::vector<std::string> help_topic;
  remember(add_help_command(app, help_topic));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return usage_error(e.what(), command_path(app));
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    for (auto& [command, runner] : commands)
      if (command->parsed()) runner();
  } catch (const ballast::cli::UsageError& e) {
    return usage_error(e.what(), command_path(app));
  } catch (const ballast::cli::ReportedFailure&) {
    Console::instance().finish();
    return 1;
  } catch (const std::exception& e) {
    Console::instance().finish();
    fmt::print(stderr, "ballast: error: {}\n", e.what());
    return 1;
  }
  Console::instance().finish();
  Console::instance().note(
      fmt::format("{} took {:.3f} s", command_path(app),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
  return 0;
}
