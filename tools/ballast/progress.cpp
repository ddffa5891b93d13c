// Download progress on stderr (see progress.hpp).
#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "cli_common.hpp"

namespace ballast::cli {

ProgressPrinter::ProgressPrinter() : terminal_(::isatty(STDERR_FILENO) != 0) {}

void ProgressPrinter::operator()(const DownloadProgress& p) {
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

}  // namespace ballast::cli
