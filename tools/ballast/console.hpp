// What a command says on stderr besides its results and its final error: download progress,
// notes (-v) and warnings, as -q/--quiet, -v/--verbose and HF_HUB_DISABLE_PROGRESS_BARS ask.
// One per process, as stderr is.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "ballast/config.hpp"
#include "progress.hpp"

namespace ballast::cli {

enum class Verbosity { quiet, normal, verbose };

class Console {
 public:
  static Console& instance();

  // Adds -q/--quiet and -v/--verbose to a command.
  void add_flags(CLI::App& command);
  Verbosity verbosity() const;

  // The display downloads and tasks report to; nullptr when progress is not shown (-q, or
  // HF_HUB_DISABLE_PROGRESS_BARS set to a true value).
  ProgressDisplay* progress();
  // As progress(), but only on a terminal (progress that would be noise in a log).
  ProgressDisplay* terminal_progress();
  // WeightLoaderConfig::on_download_progress for the display (empty when none is shown).
  std::function<void(const DownloadProgress&)> download_progress();

  // "ballast: TEXT" on stderr with -v.
  void note(const std::string& text);
  // "ballast: warning: TEXT" on stderr, also with -q.
  void warn(const std::string& text);
  // Writes a result line on stdout, with progress lines out of its way.
  void result(const std::string& text);
  // Ends the progress display before the command's last words (its summary or error).
  void finish();

 private:
  void say(const std::string& text);

  int quiet_ = 0, verbose_ = 0;  // the flags' counts
  bool terminal_ = false;
  std::unique_ptr<ProgressDisplay> display_;
  bool display_made_ = false;
};

// True when an HF_* style boolean variable is set to a true value (1, ON, YES, TRUE; any case).
bool env_flag_true(const char* name);

}  // namespace ballast::cli
