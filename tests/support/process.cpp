// Test child processes (see process.hpp).
#include "support/process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace ballast::test {

namespace {

// In the child, before exec: its own process group, death with the parent, and no descriptor
// but its stdin (/dev/null), stdout (`out`) and stderr (`stderr_path` or /dev/null).
void prepare_child(pid_t parent, int out, const std::string& stderr_path) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before the line above
  const int null = open("/dev/null", O_RDWR);
  const int err = stderr_path.empty()
                      ? null
                      : open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (null < 0 || err < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(127);
  close_range(3, UINT_MAX, CLOSE_RANGE_CLOEXEC);
}

}  // namespace

Process::Process(const std::vector<std::string>& argv, const std::string& stderr_path) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    close(fds[0]);
    close(fds[1]);
    throw std::runtime_error("fork failed");
  }
  if (pid_ == 0) {
    prepare_child(parent, fds[1], stderr_path);
    execv(args[0], args.data());
    _exit(127);
  }
  setpgid(pid_, pid_);  // also here: a stop() right after fork signals the group
  close(fds[1]);
  out_ = fds[0];
}

Process::~Process() {
  stop();
  if (out_ >= 0) close(out_);
}

std::optional<std::string> Process::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (size_t nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{out_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
    char chunk[4096];
    ssize_t n = read(out_, chunk, sizeof chunk);
    if (n == 0) output_ended_ = true;
    if (n <= 0) return std::nullopt;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

void Process::stop() {
  if (pid_ <= 0) return;
  // The whole group: a server's own children (moto under the S3 proxy) go with it.
  killpg(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    siginfo_t info{};
    // Not reaped yet (WNOWAIT): until then the group's id cannot be reused.
    if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid_)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  killpg(pid_, SIGKILL);  // whatever is left of the group
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

bool wait_for_port(int port, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(s);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

int free_port() {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  close(s);
  return ntohs(addr.sin_port);
}

}  // namespace ballast::test
