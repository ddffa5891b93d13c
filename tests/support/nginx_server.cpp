// nginx for tests (see nginx_server.hpp).
#include "support/nginx_server.hpp"

#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

namespace ballast::test {
namespace {

const char* kNginx = "/usr/sbin/nginx";

std::string config(const std::filesystem::path& dir, int port,
                   const std::optional<std::filesystem::path>& golden) {
  std::string d = dir.string();
  std::string golden_location =
      golden ? fmt::format("location /golden/ {{ alias {}/; }}", golden->string()) : "";
  return fmt::format(R"(daemon off;
master_process off;
worker_processes 1;
pid {0}/nginx.pid;
error_log {0}/error.log warn;
events {{ worker_connections 256; }}
http {{
  log_format ballast '$request_method|$uri|$http_range|$status|$body_bytes_sent';
  access_log {0}/access.log ballast;
  client_body_temp_path {0}/tmp/body;
  proxy_temp_path {0}/tmp/proxy;
  fastcgi_temp_path {0}/tmp/fastcgi;
  uwsgi_temp_path {0}/tmp/uwsgi;
  scgi_temp_path {0}/tmp/scgi;
  types {{ }}
  default_type application/octet-stream;
  keepalive_requests 100000;
  server {{
    listen 127.0.0.1:{1};
    location /files/ {{ alias {0}/files/; }}
    {2}
  }}
}}
)",
                     d, port, golden_location);
}

}  // namespace

NginxServer::NginxServer(std::optional<std::filesystem::path> golden) {
  if (!std::filesystem::exists(kNginx)) return;
  std::filesystem::create_directories(dir_ / "files");
  std::filesystem::create_directories(dir_ / "tmp");
  for (int attempt = 0; attempt < 5 && !process_; ++attempt) {
    port_ = free_port();
    write_file(dir_ / "nginx.conf", config(dir_.path(), port_, golden));
    auto p =
        std::make_unique<Process>(std::vector<std::string>{kNginx, "-p", dir_.path().string(), "-c",
                                                           (dir_ / "nginx.conf").string(), "-e",
                                                           (dir_ / "error.log").string()},
                                  (dir_ / "stderr.log").string());
    if (wait_for_port(port_, std::chrono::seconds(10))) process_ = std::move(p);
  }
}

NginxServer::~NginxServer() {
  if (process_) process_->stop();
}

std::string NginxServer::url(const std::string& path) const {
  return fmt::format("http://127.0.0.1:{}/{}", port_, path);
}

std::vector<NginxRequest> NginxServer::requests() const {
  std::vector<NginxRequest> out;
  std::ifstream in(dir_ / "access.log");
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string part; std::getline(ss, part, '|');) f.push_back(part);
    if (f.size() != 5) continue;
    out.push_back({f[0], f[1], f[2] == "-" ? "" : f[2], std::stoi(f[3]), std::stoull(f[4])});
  }
  return out;
}

uint64_t NginxServer::body_bytes_sent() const {
  uint64_t total = 0;
  for (const auto& r : requests()) total += r.body_bytes;
  return total;
}

uint64_t NginxServer::settled_body_bytes() const {
  uint64_t last = body_bytes_sent();
  for (int stable = 0, round = 0; stable < 5 && round < 200; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const uint64_t now = body_bytes_sent();
    stable = now == last ? stable + 1 : 0;
    last = now;
  }
  return last;
}

void NginxServer::clear_log() const { std::ofstream(dir_ / "access.log", std::ios::trunc); }

}  // namespace ballast::test
