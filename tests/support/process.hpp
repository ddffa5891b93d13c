// A child process for tests (a server on 127.0.0.1): started with fork/exec, its first stdout
// line readable with a deadline, stopped (SIGTERM, then SIGKILL) when the object dies.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ballast::test {

class Process {
 public:
  // Starts argv[0] with the arguments; stdout is a pipe, stderr goes to `stderr_path` (or is
  // inherited when empty).
  explicit Process(const std::vector<std::string>& argv, const std::string& stderr_path = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // The next line of stdout, or nullopt at end of output or after `timeout`.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Stops the process and waits for it (bounded).
  void stop();
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string buffer_;
};

// True when a TCP connection to 127.0.0.1:port succeeds within `timeout`.
bool wait_for_port(int port, std::chrono::milliseconds timeout);
// A port that was free a moment ago (bind to port 0, read it, close).
int free_port();

}  // namespace ballast::test
