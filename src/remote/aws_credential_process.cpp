// Credentials from an external process (see aws_credential_process.hpp).
#include "remote/aws_credential_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "remote/aws_http.hpp"

extern char** environ;

namespace ballast {
namespace {

// The child's stdout, read until it closes, more than the bound arrives or the deadline passes.
// Returns false when the process must be killed.
bool read_output(int fd, std::chrono::steady_clock::time_point deadline, std::string& out,
                 std::string& why) {
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      why = "did not finish in time";
      return false;
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline check above ends it
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    if (out.size() + static_cast<size_t>(n) > kMaxAwsAnswerBytes) {
      why = fmt::format("printed more than {} bytes", kMaxAwsAnswerBytes);
      return false;
    }
    out.append(buffer, static_cast<size_t>(n));
  }
}

// Reaps the child once it has exited, up to the deadline. Returns false when it is still
// running then (it may have closed its stdout and gone on).
bool wait_for_exit(pid_t pid, std::chrono::steady_clock::time_point deadline, int& status) {
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return true;
    if (done < 0 && errno != EINTR) return true;  // not our child any more: nothing to wait for
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

AwsCredentials run_credential_process(const std::string& command, const std::string& provider,
                                      std::chrono::milliseconds timeout) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw Error(ErrorCode::auth, fmt::format("{}: cannot make a pipe", provider));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  // A process group of its own, so that a process killed for its time takes its children
  // along (they would otherwise keep running and hold the caller's stderr open).
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, "/bin/sh", &actions, &attributes,
                                    const_cast<char* const*>(argv), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    throw Error(ErrorCode::auth, fmt::format("{}: /bin/sh could not be started", provider));
  }
  // One deadline for the output and the exit: a process that closes its stdout and goes on
  // running is killed at it like one that never prints.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string output, why;
  bool finished = read_output(pipe_fds[0], deadline, output, why);
  ::close(pipe_fds[0]);
  int status = 0;
  if (finished && !wait_for_exit(pid, deadline, status)) {
    finished = false;
    why = "did not exit in time";
  }
  if (!finished) {
    ::kill(-pid, SIGKILL);  // the whole process group: the command and its children
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (!finished) throw Error(ErrorCode::auth, fmt::format("{}: the process {}", provider, why));
  if (WIFSIGNALED(status))
    throw Error(ErrorCode::auth,
                fmt::format("{}: the process was killed by signal {}", provider, WTERMSIG(status)));
  if (WEXITSTATUS(status) != 0)
    throw Error(ErrorCode::auth, fmt::format("{}: the process exited with status {}", provider,
                                             WEXITSTATUS(status)));
  const nlohmann::json document = nlohmann::json::parse(output, nullptr, false);
  if (!document.is_object() || document.value("Version", nlohmann::json()) != 1)
    throw Error(ErrorCode::auth,
                fmt::format("{}: the output is not a JSON object with \"Version\": 1", provider));
  return aws_credentials_from_json(output, provider, "SessionToken");
}

}  // namespace ballast
