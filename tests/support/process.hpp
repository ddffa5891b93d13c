// A child process for tests (a server on 127.0.0.1): started with fork/exec, its first stdout
// line readable with a deadline, stopped (SIGTERM, then SIGKILL) when the object dies.
//
// It dies with its test: it leads a process group of its own, which stop() signals whole (a
// server's own children included), and it gets SIGKILL when the thread that started it ends
// (PR_SET_PDEATHSIG), so a test that crashes leaves no server behind. It holds none of the
// test's output: stdin is /dev/null, stdout a pipe to the test, stderr a file or /dev/null, and
// no other descriptor of the test stays open in it (ctest waits for its output pipe to close).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ballast::test {

class Process {
 public:
  // Starts argv[0] with the arguments; stdout is a pipe, stderr goes to `stderr_path` (or to
  // /dev/null when empty). Start it from the thread that outlives it (the test's).
  explicit Process(const std::vector<std::string>& argv, const std::string& stderr_path = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // The next line of stdout, or nullopt at end of output or after `timeout`.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // True once stdout reached its end: no process holds the pipe any longer.
  bool output_ended() const { return output_ended_; }
  // Stops the process and every process of its group, and waits for it (bounded).
  void stop();
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  bool output_ended_ = false;
  std::string buffer_;
};

// True when a TCP connection to 127.0.0.1:port succeeds within `timeout`.
bool wait_for_port(int port, std::chrono::milliseconds timeout);
// A port that was free a moment ago (bind to port 0, read it, close).
int free_port();

}  // namespace ballast::test
