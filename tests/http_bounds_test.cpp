// A hostile server cannot hold a load forever (issue 30, class 3), against
// tests/servers/fault_server.py on 127.0.0.1: bodies ballast does not need (error and redirect
// bodies) and interim 1xx responses are bounded, a trickle is cut by the per-request deadline,
// a stalled server costs two timeouts (not one per retry), the CLI takes --timeout and
// --retries, an index larger than max_header_bytes is refused before its body is read, and with
// caching on an object whose header is hostile is refused before anything of it is cached.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "ballast/ballast.hpp"
#include "support/fault_server.hpp"

namespace ballast::test {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Files of the object cache other than locks.
size_t cache_files(const TempDir& cache) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(cache.path() / "objects", ec))
    n += e.path().extension() != ".lock";
  return n;
}

TEST_F(FaultServer, EndlessErrorBodiesAreCut) {
  const auto start = Clock::now();
  std::string what;
  EXPECT_EQ(error_of(WeightSource::url(url("endless/404/m.safetensors")), config(3, 5), &what),
            ErrorCode::not_found)
      << what;
  EXPECT_EQ(error_of(WeightSource::url(url("endless/500/m.safetensors")), config(1, 5), &what),
            ErrorCode::network)
      << what;
  EXPECT_LT(seconds_since(start), 5.0);
}

TEST_F(FaultServer, EndlessRedirectBodiesAreCutAndTheRedirectFollowed) {
  const auto start = Clock::now();
  expect_exact(WeightSource::url(url("endless/302/m.safetensors")), config(3, 5));
  EXPECT_LT(seconds_since(start), 5.0);
}

TEST_F(FaultServer, EndlessInterimResponsesFail) {
  const auto start = Clock::now();
  std::string what;
  EXPECT_EQ(error_of(WeightSource::url(url("continue/m.safetensors")), config(3, 5), &what),
            ErrorCode::network);
  EXPECT_NE(what.find("interim"), std::string::npos) << what;
  EXPECT_LT(seconds_since(start), 5.0);
}

TEST_F(FaultServer, EndlessHeadersFail) {
  const auto start = Clock::now();
  std::string what;
  EXPECT_EQ(error_of(WeightSource::url(url("headers/m.safetensors")), config(3, 5), &what),
            ErrorCode::network);
  EXPECT_NE(what.find("header"), std::string::npos) << what;
  EXPECT_LT(seconds_since(start), 5.0);
}

TEST_F(FaultServer, ATrickleIsCutByTheRequestDeadline) {
  // Five bytes a second never trips the stall timeout (1 byte/s); the deadline of each request
  // (the timeout plus its bytes at the slowest acceptable rate) ends it: two attempts.
  const auto start = Clock::now();
  std::string what;
  EXPECT_EQ(error_of(WeightSource::url(url("trickle/m.safetensors")), config(5, 2), &what),
            ErrorCode::network);
  EXPECT_NE(what.find("timed out"), std::string::npos) << what;
  EXPECT_LT(seconds_since(start), 10.0);
}

TEST_F(FaultServer, AStalledServerCostsTwoTimeoutsNotOnePerRetry) {
  const auto start = Clock::now();
  std::string what;
  EXPECT_EQ(error_of(WeightSource::url(url("hold/m.safetensors")), config(5, 1), &what),
            ErrorCode::network);
  const double took = seconds_since(start);
  EXPECT_GE(took, 2.0) << "a timeout is retried once";
  EXPECT_LT(took, 5.0) << "not five times";
}

TEST_F(FaultServer, CliTakesTimeoutAndRetries) {
  for (const char* cache : {"", " --no-cache"}) {
    SCOPED_TRACE(cache);
    TempDir dir;
    const auto start = Clock::now();
    auto r = run_command(cli_path() + " inspect --timeout 1 --retries 5" + cache + " --cache-dir " +
                         shell_quote(dir.path().string()) + " " +
                         shell_quote(url("hold/m.safetensors")));
    const double took = seconds_since(start);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("network"), std::string::npos) << r.err;
    EXPECT_LT(took, 5.0);
  }
  EXPECT_EQ(run_command(cli_path() + " inspect --timeout 0 x").exit_code, 2);
  EXPECT_EQ(run_command(cli_path() + " inspect --retries -1 x").exit_code, 2);
}

TEST_F(FaultServer, AnIndexAboveMaxHeaderBytesIsRefusedBeforeItsBody) {
  for (bool caching : {false, true}) {
    SCOPED_TRACE(caching);
    TempDir cache;
    WeightLoaderConfig c = config();
    c.enable_caching = caching;
    c.cache_dir = cache.path();
    c.limits.max_header_bytes = 1 << 20;
    std::string what;
    EXPECT_EQ(error_of(WeightSource::url(url("huge/model.safetensors.index.json")), c, &what),
              ErrorCode::limit_exceeded)
        << what;
    EXPECT_EQ(cache_files(cache), 0u);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the server notices the hang-up
  EXPECT_LT(stats()["huge_sent"].get<uint64_t>(), uint64_t{32} << 20) << "of 256 MiB";
}

TEST_F(FaultServer, WithCachingAHostileHeaderIsRefusedBeforeTheDownload) {
  // A header that is not JSON in front of 4 MiB: the probe by ranges refuses it, so neither the
  // 4 MiB nor anything else of it reaches the cache.
  std::string bad(8, '\0');
  bad[0] = 16;
  bad += "{not json at all";
  bad += std::string(4 << 20, '\0');
  write_file(dir_ / "bad.safetensors", bad);
  TempDir cache;
  WeightLoaderConfig c = config();
  c.enable_caching = true;
  c.cache_dir = cache.path();
  EXPECT_EQ(error_of(WeightSource::url(url("ok/bad.safetensors")), c), ErrorCode::invalid_format);
  EXPECT_EQ(cache_files(cache), 0u);
  EXPECT_LT(stats()["counts"].value("GET /ok/bad.safetensors", 0), 4)
      << "a whole download is 64 ranged GETs";
  c.limits.max_header_bytes = 64;  // a valid header above the limit
  EXPECT_EQ(error_of(WeightSource::url(url("ok/m.safetensors")), c), ErrorCode::limit_exceeded);
  EXPECT_EQ(cache_files(cache), 0u);
}

}  // namespace
}  // namespace ballast::test
