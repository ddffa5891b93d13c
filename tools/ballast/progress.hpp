// Download progress on stderr for every ballast command that may download.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "ballast/config.hpp"

namespace ballast::cli {

// Prints download progress: one rewritten line on a terminal, else a line per tenth.
class ProgressPrinter {
 public:
  ProgressPrinter();
  void operator()(const DownloadProgress& p);

 private:
  std::mutex mutex_;
  const bool terminal_;
  std::string source_;
  std::chrono::steady_clock::time_point start_, last_print_;
  int last_tenth_ = -1;
};

}  // namespace ballast::cli
