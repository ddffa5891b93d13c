// The ballast subcommands. Each registers itself on the app and returns the function that runs
// it once the command line is parsed.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace ballast::cli {

using Runner = std::function<void()>;

Runner add_inspect_command(CLI::App& app);
Runner add_hash_command(CLI::App& app);
Runner add_load_command(CLI::App& app);
Runner add_convert_command(CLI::App& app);
Runner add_fetch_command(CLI::App& app);
Runner add_cache_command(CLI::App& app);

}  // namespace ballast::cli
