// The fixture of the hostile-HTTP tests: tests/servers/fault_server.py on 127.0.0.1 serving a
// folder that holds m.safetensors (tensors "a" and "b", their sha256 in expected_), with
// helpers to load from it, catch the error a load ends in and read the server's statistics.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ballast/ballast.hpp"
#include "support/process.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {

class FaultServer : public testing::Test {
 protected:
  void SetUp() override {
    std::string a(200 << 10, '\0'), b(100 << 10, '\0');
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<char>(i * 31 + 7);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>(i * 17 + 3);
    write_file(dir_ / "m.safetensors",
               safetensors_file({{"a", "U8", {200 << 10}, a}, {"b", "U8", {100 << 10}, b}}));
    auto local = make_weight_loader();
    for (const char* name : {"a", "b"})
      expected_[name] = sha256_hex(*local->load_tensor(
          {.name = name, .source = WeightSource::file(dir_ / "m.safetensors")}));
    server_ = std::make_unique<Process>(std::vector<std::string>{
        "/usr/bin/python3", BALLAST_SOURCE_DIR "/tests/servers/fault_server.py",
        dir_.path().string()});
    auto line = server_->read_line(std::chrono::seconds(20));
    ASSERT_TRUE(line) << "the fault server did not start";
    std::istringstream(*line) >> port_ >> other_port_;
  }

  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + path;
  }

  static WeightLoaderConfig config(int retries = 3, double timeout = 10) {
    WeightLoaderConfig c;
    c.enable_caching = false;
    c.download_retries = retries;
    c.download_timeout_seconds = timeout;
    c.download_chunk_bytes = 64 << 10;  // several ranges per tensor
    c.max_concurrent_downloads = 2;
    return c;
  }

  // Loads both tensors and checks their hashes.
  void expect_exact(const WeightSource& source, const WeightLoaderConfig& c) {
    auto loader = make_weight_loader(c);
    for (const char* name : {"a", "b"})
      EXPECT_EQ(sha256_hex(*loader->load_tensor({.name = name, .source = source})), expected_[name])
          << name;
  }

  // The error code of loading tensor "a".
  ErrorCode error_of(const WeightSource& source, const WeightLoaderConfig& c,
                     std::string* what = nullptr) {
    try {
      make_weight_loader(c)->load_tensor({.name = "a", .source = source});
    } catch (const Error& e) {
      if (what) *what = e.what();
      return e.code();
    }
    ADD_FAILURE() << "expected an error";
    return ErrorCode::cancelled;
  }

  nlohmann::json stats() {
    auto r = run_command("/usr/bin/python3 -c " +
                         shell_quote("import urllib.request,sys; sys.stdout.write(urllib.request."
                                     "urlopen('" +
                                     url("stats") + "').read().decode())"));
    return nlohmann::json::parse(r.out);
  }

  TempDir dir_;
  std::map<std::string, std::string> expected_;
  std::unique_ptr<Process> server_;
  int port_ = 0, other_port_ = 0;
};

}  // namespace ballast::test
