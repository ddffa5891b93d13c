// Debian's nginx on a free 127.0.0.1 port for tests, with a generated configuration in a
// temporary folder (daemon off; pid, logs and temp paths inside it). It serves the golden
// corpus read-only under /golden/ and a folder of generated files under /files/, and logs
// every request's Range and body bytes so tests can count the bytes a load fetched.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/test_support.hpp"

namespace ballast::test {

struct NginxRequest {
  std::string method, uri, range;
  int status = 0;
  uint64_t body_bytes = 0;
};

class NginxServer {
 public:
  // Starts nginx; available() is false when the binary is absent or will not start.
  explicit NginxServer(std::optional<std::filesystem::path> golden = golden_dir());
  ~NginxServer();

  bool available() const { return process_ != nullptr; }
  // nginx's process id (the leader of its process group), -1 when not available.
  pid_t pid() const { return process_ ? process_->pid() : -1; }
  std::string url(const std::string& path) const;  // "http://127.0.0.1:PORT/<path>"
  // Where /files/ is served from (write files here).
  std::filesystem::path files() const { return dir_ / "files"; }
  // Requests logged so far, and the body bytes they sent in total.
  std::vector<NginxRequest> requests() const;
  uint64_t body_bytes_sent() const;
  // body_bytes_sent() once it has stopped changing: nginx logs a request only after its
  // response is sent, which can be just after the client has read it.
  uint64_t settled_body_bytes() const;
  void clear_log() const;

 private:
  TempDir dir_;
  int port_ = 0;
  std::unique_ptr<Process> process_;
};

// Ends the current test (BALLAST_MISSING) when nginx is absent.
#define BALLAST_REQUIRE_NGINX(server)                                                   \
  do {                                                                                  \
    if (!(server).available())                                                          \
      BALLAST_MISSING("nginx is not installed (apt-get install nginx-light); skipped"); \
  } while (0)

}  // namespace ballast::test
