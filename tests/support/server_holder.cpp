// A test process that crashes while it holds servers (server_teardown_test): in the folder
// given as its argument (its TMPDIR, which the test removes), it starts nginx,
// the fault and Hub stand-ins (Python) and the S3 proxy with moto under it, as tests do,
// prints "server NAME PID" for each (PID leads the server's process group; "missing NAME WHY"
// for one that cannot start here), then "crashing", and aborts. Its stderr is its stdout, so a
// server that kept either of the test's output descriptors would keep the reader's pipe open.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "support/nginx_server.hpp"
#include "support/process.hpp"
#include "support/s3_server.hpp"
#include "support/test_support.hpp"

namespace {

using ballast::test::Process;

void report(const std::string& name, pid_t pid, const std::string& why) {
  if (pid > 0)
    std::printf("server %s %d\n", name.c_str(), static_cast<int>(pid));
  else
    std::printf("missing %s %s\n", name.c_str(), why.c_str());
  std::fflush(stdout);
}

// A Python stand-in's process id, once it printed its port.
pid_t start_python_server(Process& server) {
  return server.read_line(std::chrono::seconds(30)) ? server.pid() : -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  setenv("TMPDIR", argv[1], 1);
  dup2(1, 2);
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // the abort below leaves no core file

  const std::string folder = argv[1];
  ballast::test::NginxServer nginx(std::nullopt);
  report("nginx", nginx.pid(), "nginx is not installed");
  Process fault({"/usr/bin/python3", BALLAST_SOURCE_DIR "/tests/servers/fault_server.py", folder});
  report("fault_server", start_python_server(fault), "/usr/bin/python3 did not start it");
  Process hub({"/usr/bin/python3", BALLAST_SOURCE_DIR "/tests/servers/hub_server.py", folder});
  report("hub_server", start_python_server(hub), "/usr/bin/python3 did not start it");
  ballast::test::S3Server s3;
  report("s3_proxy", s3.pid(), s3.unavailable());

  std::printf("crashing\n");
  std::fflush(stdout);
  std::abort();
}
