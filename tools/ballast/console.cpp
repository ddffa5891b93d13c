// The process's stderr for the ballast commands (see console.hpp).
#include "console.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

namespace ballast::cli {
namespace {

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return text;
}

// The locale's character set is UTF-8 (LC_ALL, else LC_CTYPE, else LANG, as setlocale reads).
bool utf8_locale() {
  for (const char* name : {"LC_ALL", "LC_CTYPE", "LANG"})
    if (const char* value = std::getenv(name); value && *value) {
      const std::string text = upper(value);
      return text.find("UTF-8") != std::string::npos || text.find("UTF8") != std::string::npos;
    }
  return false;
}

}  // namespace

bool env_flag_true(const char* name) {
  const char* value = std::getenv(name);
  if (!value) return false;
  const std::string text = upper(value);
  return text == "1" || text == "ON" || text == "YES" || text == "TRUE";
}

Console& Console::instance() {
  static Console console;
  return console;
}

void Console::add_flags(CLI::App& command) {
  auto* quiet = command.add_flag("-q,--quiet", quiet_,
                                 "no progress and no notes on stderr (results, warnings and errors "
                                 "are still printed)");
  command.add_flag("-v,--verbose", verbose_, "notes on stderr: settings, sources, timings")
      ->excludes(quiet);
}

Verbosity Console::verbosity() const {
  if (quiet_ > 0) return Verbosity::quiet;
  return verbose_ > 0 ? Verbosity::verbose : Verbosity::normal;
}

ProgressDisplay* Console::progress() {
  if (!display_made_) {
    display_made_ = true;
    terminal_ = ::isatty(STDERR_FILENO) != 0;
    if (verbosity() != Verbosity::quiet && !env_flag_true("HF_HUB_DISABLE_PROGRESS_BARS"))
      display_ = std::make_unique<ProgressDisplay>(
          ProgressDisplay::Style{.terminal = terminal_, .unicode = terminal_ && utf8_locale()},
          stderr);
  }
  return display_.get();
}

ProgressDisplay* Console::terminal_progress() {
  ProgressDisplay* display = progress();
  return terminal_ ? display : nullptr;
}

std::function<void(const DownloadProgress&)> Console::download_progress() {
  ProgressDisplay* display = progress();
  if (!display) return {};
  return [display](const DownloadProgress& p) {
    display->update(p.source, p.bytes_done, p.bytes_total);
  };
}

void Console::say(const std::string& text) {
  auto write = [&] { fmt::print(stderr, "{}\n", text); };
  if (ProgressDisplay* display = progress())
    display->print_above(write);
  else
    write();
}

void Console::note(const std::string& text) {
  if (verbosity() == Verbosity::verbose) say("ballast: " + text);
}

void Console::warn(const std::string& text) { say("ballast: warning: " + text); }

void Console::result(const std::string& text) {
  auto write = [&] { fmt::print("{}\n", text); };
  if (ProgressDisplay* display = progress())
    display->print_above(write);
  else
    write();
}

void Console::finish() {
  if (display_) display_->finish();
}

}  // namespace ballast::cli
