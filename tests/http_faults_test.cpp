// Remote reads against a hostile or flaky HTTP server (tests/servers/fault_server.py on
// 127.0.0.1): no Range support, connections dropped mid-body, 429/500/503 bursts with
// Retry-After, a stalled server, bodies and ranges that disagree with the request, an object
// that changes while read, and a redirect to another port that must not carry Authorization.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "ballast/ballast.hpp"
#include "support/fault_server.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

TEST_F(FaultServer, CorrectServerGivesExactTensors) {
  expect_exact(WeightSource::url(url("ok/m.safetensors")), config());
}

TEST_F(FaultServer, ServerWithoutRangeSupportIsReadSequentially) {
  expect_exact(WeightSource::url(url("norange/m.safetensors")), config());
}

TEST_F(FaultServer, DroppedConnectionsResume) {
  expect_exact(WeightSource::url(url("drop/m.safetensors")), config());
}

TEST_F(FaultServer, BurstsOfRetryableStatusesAreRetriedAfterRetryAfter) {
  for (int code : {429, 500, 503}) {
    SCOPED_TRACE(code);
    expect_exact(WeightSource::url(url("burst/" + std::to_string(code) + "/2/m.safetensors")),
                 config(3));
  }
}

TEST_F(FaultServer, TooManyFailuresAreANetworkError) {
  EXPECT_EQ(error_of(WeightSource::url(url("burst/503/100/m.safetensors")), config(1)),
            ErrorCode::network);
}

TEST_F(FaultServer, StalledServerTimesOutWithANetworkError) {
  EXPECT_EQ(error_of(WeightSource::url(url("stall/m.safetensors")), config(0, 1)),
            ErrorCode::network);
}

// Entries in /proc/self/<what> ("task": threads, "fd": open files).
size_t count_entries(const char* what) {
  const std::filesystem::path dir = std::filesystem::path("/proc/self") / what;
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir),
                                           std::filesystem::directory_iterator()));
}

// Waits (bounded, generously) for the process to be back to `threads` threads.
size_t threads_after_settling(size_t threads) {
  for (int i = 0; i < 300 && count_entries("task") > threads; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return count_entries("task");
}

TEST_F(FaultServer, CancelledLoadsLeaveNoThreadsOrFiles) {
  // Loads against a stalled server with a short timeout: some awaited, some abandoned (the
  // future dropped unread), then the loader destroyed with transfers in flight. Afterwards the
  // process has its threads and descriptors back; LeakSanitizer (asan preset) checks memory.
  const size_t threads = count_entries("task"), fds = count_entries("fd");
  const auto stalled = WeightSource::url(url("stall/m.safetensors"));
  {
    auto loader = make_weight_loader(config(0, 1));
    auto awaited = loader->load_tensor_async({.name = "a", .source = stalled});
    for (int i = 0; i < 4; ++i) (void)loader->load_tensor_async({.name = "b", .source = stalled});
    (void)loader->get_metadata_async(stalled);
    try {
      awaited.get();
      ADD_FAILURE() << "a stalled server gave a tensor";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::network) << e.what();
    }
    (void)loader->load_tensors_async(
        {{.name = "a", .source = stalled}, {.name = "b", .source = stalled}});
  }  // destroyed with the last requests still waiting on the server
  EXPECT_EQ(threads_after_settling(threads), threads);
  EXPECT_EQ(count_entries("fd"), fds);
}

TEST_F(FaultServer, FlippedBytesWithRightLengthsAreDeliveredAsSent) {
  // Plain HTTP carries no checksum of a range: the bytes differ, the lengths are right. (Hub
  // files are checked against their sha256 when downloaded whole.)
  auto source = WeightSource::url(url("flip/m.safetensors"));
  auto loader = make_weight_loader(config());
  try {
    auto a = loader->load_tensor({.name = "a", .source = source});
    EXPECT_NE(sha256_hex(*a), expected_["a"]);
  } catch (const Error& e) {  // a flipped header byte is invalid_format
    EXPECT_EQ(e.code(), ErrorCode::invalid_format) << e.what();
  }
}

TEST_F(FaultServer, BodiesLongerThanRequestedAreIntegrityErrors) {
  EXPECT_EQ(error_of(WeightSource::url(url("long/m.safetensors")), config()), ErrorCode::integrity);
}

TEST_F(FaultServer, WrongContentRangeIsAnIntegrityError) {
  EXPECT_EQ(error_of(WeightSource::url(url("badrange/m.safetensors")), config()),
            ErrorCode::integrity);
}

TEST_F(FaultServer, ObjectChangingWhileReadIsAnIntegrityError) {
  EXPECT_EQ(error_of(WeightSource::url(url("etag/m.safetensors")), config()), ErrorCode::integrity);
}

// The object changes after the load opened it and its GET answers state no ETag: every
// ranged request carries If-Match with the version first seen, so the server's 412 fails the
// load instead of the bytes of two versions coming back as one tensor.
TEST_F(FaultServer, AnObjectChangingUnderGetsWithoutETagsFailsTheLoad) {
  std::string changed = read_file(dir_ / "m.safetensors");
  for (size_t i = changed.size() - 1000; i < changed.size(); ++i) changed[i] ^= 0x55;
  write_file(dir_ / "m.safetensors.v2", changed);
  std::string what;
  EXPECT_EQ(error_of(WeightSource::url(url("changing/m.safetensors")), config(), &what),
            ErrorCode::integrity);
  EXPECT_NE(what.find("changed while it was being read"), std::string::npos) << what;
}

// An object whose server states neither ETag nor Last-Modified (/unvalidated/: the version
// changes after the first GET) has nothing to pin its later requests to. With integrity checks
// on, ballast reads it in one request only: caching off, the second request is refused; caching
// on, it is downloaded whole in one GET whose first bytes must be those the header probe read.
// Before, both loads silently mixed the two versions' bytes.
class UnvalidatedObject : public FaultServer {
 protected:
  void SetUp() override {
    FaultServer::SetUp();
    std::string changed = read_file(dir_ / "m.safetensors");
    for (size_t at : {size_t{1000}, size_t{150} << 10})  // in the first 64 KiB read, and after
      for (size_t i = at; i < at + 100; ++i) changed[i] ^= 0x55;
    write_file(dir_ / "m.safetensors.v2", changed);
  }
  WeightSource source() const { return WeightSource::url(url("unvalidated/m.safetensors")); }
};

TEST_F(UnvalidatedObject, WithoutCachingASecondRequestIsRefused) {
  std::string what;
  EXPECT_EQ(error_of(source(), config(), &what), ErrorCode::integrity);
  EXPECT_NE(what.find("neither an ETag nor a Last-Modified"), std::string::npos) << what;
}

TEST_F(UnvalidatedObject, WithCachingTheWholeDownloadMustStartWithTheProbedBytes) {
  TempDir cache;
  WeightLoaderConfig c = config();
  c.enable_caching = true;
  c.cache_dir = cache.path();
  std::string what;
  EXPECT_EQ(error_of(source(), c, &what), ErrorCode::integrity);
  EXPECT_NE(what.find("changed while it was being read"), std::string::npos) << what;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache / "objects", ec))
    EXPECT_NE(e.path().extension(), ".blob") << e.path();
}

TEST_F(UnvalidatedObject, AnUnchangedOneIsCachedWholeInOneRequest) {
  write_file(dir_ / "m.safetensors.v2", read_file(dir_ / "m.safetensors"));
  TempDir cache;
  WeightLoaderConfig c = config();
  c.enable_caching = true;
  c.cache_dir = cache.path();
  expect_exact(source(), c);
}

TEST_F(UnvalidatedObject, WithIntegrityChecksOffSeveralRequestsAreAllowed) {
  WeightLoaderConfig c = config();
  c.enable_integrity_checks = false;
  EXPECT_NO_THROW(make_weight_loader(c)->load_tensor({.name = "a", .source = source()}));
}

TEST_F(FaultServer, RedirectToAnotherPortDropsAuthorization) {
  auto source =
      WeightSource::url(url("auth/m.safetensors"), {{"Authorization", "Bearer secret-token"}});
  expect_exact(source, config());
  json s = stats();
  ASSERT_FALSE(s["other_auth"].empty());
  for (const auto& seen : s["other_auth"]) EXPECT_EQ(seen, "");
}

TEST_F(FaultServer, MissingOrWrongCredentialsAreAuthErrorsWithoutSecrets) {
  std::string what;
  EXPECT_EQ(error_of(WeightSource::url(url("auth/m.safetensors")), config(), &what),
            ErrorCode::auth);
  EXPECT_EQ(error_of(WeightSource::url(url("auth/m.safetensors"),
                                       {{"Authorization", "Bearer wrong-secret"}}),
                     config(), &what),
            ErrorCode::auth);
  EXPECT_EQ(what.find("wrong-secret"), std::string::npos) << what;
  const std::string with_password =
      "http://user:hunter2@127.0.0.1:" + std::to_string(port_) + "/auth/m.safetensors?sig=s3cr3t";
  EXPECT_EQ(error_of(WeightSource::url(with_password), config(), &what), ErrorCode::auth);
  EXPECT_EQ(what.find("hunter2"), std::string::npos) << what;
  EXPECT_EQ(what.find("s3cr3t"), std::string::npos) << what;
}

TEST_F(FaultServer, RequestsAreRetriedAndResumedNotRepeatedWhole) {
  expect_exact(WeightSource::url(url("drop/m.safetensors")), config());
  json s = stats();
  EXPECT_GT(s["counts"]["GET /drop/m.safetensors"].get<int>(), 1);
}

// With caching on, every fault either ends in an exact, complete blob or in an error that
// leaves the cache without any file of the object.
TEST_F(FaultServer, CacheHoldsOnlyCompleteObjects) {
  auto cache_files = [](const TempDir& cache) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(cache.path() / "objects", ec))
      if (e.path().extension() != ".lock") names.push_back(e.path().filename().string());
    return names;
  };
  for (const char* good : {"ok", "norange", "drop", "burst/503/2"}) {
    SCOPED_TRACE(good);
    TempDir cache;
    WeightLoaderConfig c = config();
    c.enable_caching = true;
    c.cache_dir = cache.path();
    expect_exact(WeightSource::url(url(std::string(good) + "/m.safetensors")), c);
    EXPECT_EQ(cache_files(cache).size(), 2u);  // the blob and its record
  }
  for (const char* bad : {"long", "badrange", "etag", "burst/503/100", "stall"}) {
    SCOPED_TRACE(bad);
    TempDir cache;
    WeightLoaderConfig c = config(1, 1);
    c.enable_caching = true;
    c.cache_dir = cache.path();
    error_of(WeightSource::url(url(std::string(bad) + "/m.safetensors")), c);
    EXPECT_TRUE(cache_files(cache).empty());
  }
}

}  // namespace
}  // namespace ballast::test
