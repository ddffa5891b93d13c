// The progress display on stderr: one line per active download (or task), with a bar, bytes,
// rate and ETA. On a terminal the lines are redrawn in place (ANSI), fit its width and leave no
// stale or partial line; elsewhere (a log, CI) a line every few seconds per file and one when
// it completes. Thread-safe: downloads report from the loader's threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace ballast::cli {

// The rate of a transfer over its last few seconds, from samples of its running total.
class RateWindow {
 public:
  using Clock = std::chrono::steady_clock;
  void add(Clock::time_point now, uint64_t done);
  // Units per second; 0 until the samples span a fifth of a second.
  double per_second() const;

 private:
  std::deque<std::pair<Clock::time_point, uint64_t>> samples_;  // a tenth of a second apart
  std::pair<Clock::time_point, uint64_t> latest_{};
};

class ProgressDisplay {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Unit { bytes, tensors };
  struct Style {
    bool terminal = false;                         // redraw in place; else print lines
    bool unicode = false;                          // a bar of eighth blocks; else ASCII
    std::chrono::milliseconds log_interval{5000};  // not a terminal: one line per file this often
  };

  ProgressDisplay(Style style, FILE* out);

  // `label` has done `done` of `total` units; its line ends (printed once, complete) when
  // done == total. A label seen again after that starts a new line.
  void update(const std::string& label, uint64_t done, uint64_t total, Unit unit = Unit::bytes);
  // Runs `write` (a result or a message) with the progress lines cleared first and redrawn
  // below it afterwards, so that the two never mix on a terminal.
  void print_above(const std::function<void()>& write);
  // Clears the lines of tasks that never completed (a failed download); what follows starts
  // on a clean line.
  void finish();

  // Terminal columns: TIOCGWINSZ on stderr, else $COLUMNS, else 80.
  static int terminal_columns();

 private:
  struct Task {
    std::string label;
    Unit unit = Unit::bytes;
    uint64_t done = 0, total = 0;
    Clock::time_point started, last_logged;
    RateWindow rate;
  };

  std::string line_for(const Task& task, Clock::time_point now, int columns) const;
  void redraw(Clock::time_point now, const std::vector<std::string>& completed);
  std::string erase_block();

  const Style style_;
  FILE* const out_;
  std::mutex mutex_;
  std::vector<Task> active_;
  size_t drawn_lines_ = 0;  // terminal: lines of the block now on screen, above the cursor
  Clock::time_point last_draw_{};
};

}  // namespace ballast::cli
