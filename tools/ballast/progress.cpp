// The progress display on stderr (see progress.hpp).
#include "progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "cli_common.hpp"

namespace ballast::cli {
namespace {

using namespace std::chrono_literals;

constexpr auto kSampleSpacing = 100ms;  // rate samples at most this often
constexpr auto kRateWindow = 5s;        // the rate is over about this long
constexpr auto kMinRateSpan = 200ms;    // ... and over at least this long
constexpr auto kRedrawInterval = 100ms;
constexpr size_t kMaxLines = 8;  // active lines drawn at once; beyond, a "... N more" line

// Code points in UTF-8 text (one terminal column each; wide characters are not measured).
size_t columns_of(std::string_view text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// The last `keep` code points of `text`.
std::string_view tail_columns(std::string_view text, size_t keep) {
  size_t seen = 0, i = text.size();
  while (i > 0 && seen < keep) {
    --i;
    if ((text[i] & 0xC0) != 0x80) ++seen;
  }
  return text.substr(i);
}

// The first `keep` code points of `text`.
std::string_view head_columns(std::string_view text, size_t keep) {
  size_t seen = 0, i = 0;
  for (; i < text.size(); ++i) {
    if ((text[i] & 0xC0) != 0x80 && seen++ == keep) break;
  }
  return text.substr(0, i);
}

// A name from a server or a file, safe to put on a terminal: control characters become '?'.
std::string printable(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

std::string duration_text(double seconds) {
  if (!(seconds >= 0) || seconds > 359999) return "--:--";
  const auto s = static_cast<uint64_t>(seconds + 0.5);
  if (s < 3600) return fmt::format("{}:{:02}", s / 60, s % 60);
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

std::string bar_text(double fraction, size_t cells, bool unicode) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  if (!unicode) {
    const auto full = static_cast<size_t>(fraction * static_cast<double>(cells));
    return "[" + std::string(full, '#') + std::string(cells - full, '.') + "]";
  }
  static constexpr const char* kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  const auto eighths = static_cast<size_t>(fraction * static_cast<double>(cells * 8));
  std::string out = "▕";
  for (size_t i = 0; i < eighths / 8; ++i) out += "█";
  size_t used = eighths / 8;
  if (used < cells && eighths % 8) {
    out += kEighths[eighths % 8];
    ++used;
  }
  out += std::string(cells - used, ' ');
  return out + "▏";
}

}  // namespace

void RateWindow::add(Clock::time_point now, uint64_t done) {
  if (!samples_.empty() && done < samples_.back().second) samples_.clear();  // restarted
  if (samples_.empty() || now - samples_.back().first >= kSampleSpacing)
    samples_.emplace_back(now, done);
  else
    samples_.back().second = std::max(samples_.back().second, done);
  while (samples_.size() > 2 && now - samples_[1].first >= kRateWindow) samples_.pop_front();
  latest_ = {now, done};
}

double RateWindow::per_second() const {
  if (samples_.empty()) return 0;
  const auto& [first_time, first_done] = samples_.front();
  const double span = std::chrono::duration<double>(latest_.first - first_time).count();
  if (latest_.first - first_time < kMinRateSpan) return 0;
  return static_cast<double>(latest_.second - first_done) / span;
}

ProgressDisplay::ProgressDisplay(Style style, FILE* out) : style_(style), out_(out) {}

int ProgressDisplay::terminal_columns() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const char* env = std::getenv("COLUMNS")) {
    int columns = 0;
    auto [end, ec] = std::from_chars(env, env + std::strlen(env), columns);
    if (ec == std::errc() && *end == '\0' && columns > 0) return std::min(columns, 1000);
  }
  return 80;
}

std::string ProgressDisplay::line_for(const Task& task, Clock::time_point now, int columns) const {
  const bool complete = task.done >= task.total;
  const double fraction =
      task.total ? static_cast<double>(task.done) / static_cast<double>(task.total) : 1.0;
  const double elapsed = std::chrono::duration<double>(now - task.started).count();
  const double rate = complete ? (elapsed > 0.2 ? static_cast<double>(task.done) / elapsed : 0)
                               : task.rate.per_second();
  const bool bytes = task.unit == Unit::bytes;
  auto amount = [&](uint64_t n) { return bytes ? human_bytes(n) : std::to_string(n); };
  const std::string of = bytes ? "" : " tensors";
  const std::string rate_text = rate <= 0 ? "--/s"
                                : bytes   ? human_bytes(static_cast<uint64_t>(rate)) + "/s"
                                          : fmt::format("{:.1f}/s", rate);
  const std::string when =
      complete
          ? "in " + duration_text(elapsed)
          : "ETA " + (rate > 0 ? duration_text(static_cast<double>(task.total - task.done) / rate)
                               : std::string("--:--"));
  const int percent = static_cast<int>(fraction * 100);
  const std::string stats = fmt::format("{:>3}%  {} / {}{}  {:>11}  {}", percent, amount(task.done),
                                        amount(task.total), of, rate_text, when);
  const std::string label = printable(task.label);
  if (columns <= 0) return label + "  " + stats;  // not a terminal: the whole line

  // The label keeps its end (the file name); the bar takes what is left, up to 40 cells. A
  // narrow terminal loses the bar, then the padding, then the end of the line.
  const size_t budget = static_cast<size_t>(columns) - 1;  // never the last column
  const size_t label_columns = columns_of(label);
  auto fitted_label = [&](size_t width) {
    if (label_columns <= width) return label;
    const std::string ellipsis = style_.unicode ? "…" : "...";
    const size_t keep = width > columns_of(ellipsis) ? width - columns_of(ellipsis) : 0;
    return ellipsis + std::string(tail_columns(label, keep));
  };
  constexpr size_t kMinLabel = 12, kMinBar = 10, kMaxBar = 40;
  const size_t fixed = stats.size() + 2 /* label gap */ + 2 /* bar ends */ + 2 /* bar gap */;
  std::string line;
  if (budget >= fixed + kMinLabel + kMinBar) {
    const size_t rest = budget - fixed;
    const size_t cells = std::clamp(rest - std::min(label_columns, rest),
                                    std::max(kMinBar, std::min(kMaxBar, rest / 3)), kMaxBar);
    const size_t width = std::min(label_columns, rest - cells);
    line = fitted_label(width) + "  " + bar_text(fraction, cells, style_.unicode) + "  " + stats;
  } else if (budget >= stats.size() + 2 + kMinLabel) {
    line = fitted_label(budget - stats.size() - 2) + "  " + stats;
  } else {
    const std::string compact = fmt::format("{}% {}/{}{} {} {}", percent, amount(task.done),
                                            amount(task.total), of, rate_text, when);
    const size_t width =
        budget >= compact.size() + 1 + kMinLabel ? budget - compact.size() - 1 : kMinLabel;
    line = fitted_label(width) + " " + compact;
  }
  return std::string(head_columns(line, budget));
}

std::string ProgressDisplay::erase_block() {
  if (drawn_lines_ == 0) return {};
  const std::string out = fmt::format("\r\033[{}A\033[J", drawn_lines_);
  drawn_lines_ = 0;
  return out;
}

void ProgressDisplay::redraw(Clock::time_point now, const std::vector<std::string>& completed) {
  const int columns = terminal_columns();
  std::string out = erase_block();
  for (const auto& line : completed) out += line + "\n";
  const size_t shown = active_.size() <= kMaxLines ? active_.size() : kMaxLines - 1;
  for (size_t i = 0; i < shown; ++i) out += line_for(active_[i], now, columns) + "\n";
  if (shown < active_.size()) out += fmt::format("... and {} more\n", active_.size() - shown);
  drawn_lines_ = shown + (shown < active_.size() ? 1 : 0);
  std::fwrite(out.data(), 1, out.size(), out_);
  std::fflush(out_);
  last_draw_ = now;
}

void ProgressDisplay::update(const std::string& label, uint64_t done, uint64_t total, Unit unit) {
  std::lock_guard lock(mutex_);
  const auto now = Clock::now();
  auto it =
      std::find_if(active_.begin(), active_.end(), [&](const Task& t) { return t.label == label; });
  const bool fresh = it == active_.end();
  if (fresh) {
    active_.push_back(Task{.label = label, .unit = unit, .started = now, .last_logged = now});
    it = active_.end() - 1;
  } else if (done < it->done) {
    it->started = now;  // the transfer started over
  }
  it->done = done;
  it->total = total;
  it->rate.add(now, done);
  if (done >= total) {
    const std::string line = line_for(*it, now, style_.terminal ? terminal_columns() : 0);
    active_.erase(it);
    if (style_.terminal) return redraw(now, {line});
    fmt::print(out_, "{}\n", line);
    std::fflush(out_);
    return;
  }
  if (style_.terminal) {
    if (fresh || now - last_draw_ >= kRedrawInterval) redraw(now, {});
  } else if (now - it->last_logged >= style_.log_interval) {
    fmt::print(out_, "{}\n", line_for(*it, now, 0));
    std::fflush(out_);
    it->last_logged = now;
  }
}

void ProgressDisplay::print_above(const std::function<void()>& write) {
  std::lock_guard lock(mutex_);
  if (!style_.terminal || drawn_lines_ == 0) return write();
  const std::string erase = erase_block();
  std::fwrite(erase.data(), 1, erase.size(), out_);
  std::fflush(out_);
  write();
  std::fflush(stdout);
  redraw(Clock::now(), {});
}

void ProgressDisplay::finish() {
  std::lock_guard lock(mutex_);
  const std::string erase = erase_block();
  std::fwrite(erase.data(), 1, erase.size(), out_);
  std::fflush(out_);
  active_.clear();
}

}  // namespace ballast::cli
