// Configuration values are checked where they enter (issue 37): every WeightLoaderConfig value
// outside its range is an invalid_argument error naming the field, the value and the range,
// before any thread is started; default and per-source headers that would add a header of their
// own are refused without their value; a worker thread the system refuses is an Error, never
// std::terminate (ThreadPool's fault seam refuses the third thread).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <system_error>

#include "ballast/ballast.hpp"
#include "support/test_support.hpp"
#include "util/thread_pool.hpp"

namespace ballast::test {
namespace {

struct OutOfRange {
  const char* field;
  WeightLoaderConfig config;
  const char* shown;  // the value and the range as the message states them
};

WeightLoaderConfig with(const std::function<void(WeightLoaderConfig&)>& change) {
  WeightLoaderConfig config;
  change(config);
  return config;
}

TEST(ConfigRanges, OutOfRangeValuesAreInvalidArgumentsNamingFieldValueAndRange) {
  const std::vector<OutOfRange> cases = {
      {"num_threads", with([](auto& c) { c.num_threads = 4097; }),
       "[0, 4096] (0: one per core), got 4097"},
      {"num_threads", with([](auto& c) { c.num_threads = -1; }), "got -1"},
      {"alignment", with([](auto& c) { c.alignment = 24; }), "got 24"},
      {"read_chunk_bytes", with([](auto& c) { c.read_chunk_bytes = 0; }),
       "[4096, 1099511627776], got 0"},
      {"max_staging_bytes", with([](auto& c) {
         c.num_threads = 4;
         c.max_staging_bytes = 4096;
       }),
       "[16384, 1099511627776] (at least 4 KiB per worker thread), got 4096"},
      {"max_staging_bytes", with([](auto& c) { c.max_staging_bytes = ~uint64_t{0}; }),
       "got 18446744073709551615"},
      {"download_chunk_bytes", with([](auto& c) { c.download_chunk_bytes = 0; }), "got 0"},
      {"max_concurrent_downloads", with([](auto& c) { c.max_concurrent_downloads = 0; }),
       "[1, 256], got 0"},
      {"max_concurrent_downloads", with([](auto& c) { c.max_concurrent_downloads = 100000; }),
       "got 100000"},
      {"download_retries", with([](auto& c) { c.download_retries = -1; }), "[0, 100], got -1"},
      {"download_timeout_seconds", with([](auto& c) { c.download_timeout_seconds = 0; }),
       "(0, 86400], got 0"},
      {"download_timeout_seconds",
       with([](auto& c) { c.download_timeout_seconds = std::numeric_limits<double>::quiet_NaN(); }),
       "got nan"},
      {"download_timeout_seconds", with([](auto& c) { c.download_timeout_seconds = 1e300; }),
       "got 1e+300"},
  };
  for (const auto& [field, config, shown] : cases) {
    const Error e = error_of([&, &config = config] { make_weight_loader(config); });
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << what;
    EXPECT_NE(what.find(std::string(field) + " must be"), std::string::npos) << what;
    EXPECT_NE(what.find(shown), std::string::npos) << shown << ": " << what;
  }
}

TEST(ConfigRanges, DefaultHeadersThatWouldAddAHeaderAreRefusedWithoutTheirValue) {
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"Authorization", "Bearer secret-value\r\nX-Injected: yes"},
           {"X-Api-Key", std::string("secret-value\0rest", 17)},
           {"X-Injected: yes\r\nAuthorization", "secret-value"},
           {"", "secret-value"}}) {
    const Error e = error_of([&, &name = name, &value = value] {
      make_weight_loader({.default_headers = {{name, value}}});
    });
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("default_headers"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("secret-value"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(make_weight_loader({.default_headers = {{"X-Folded", "a\tb c"}}}));
}

// A URL source's own headers are checked the same way, before any request (nothing listens
// at the URL).
TEST(ConfigRanges, SourceHeadersThatWouldAddAHeaderAreRefusedWithoutTheirValue) {
  auto loader = make_weight_loader({.enable_caching = false, .download_retries = 0});
  const Error e = error_of([&] {
    loader->get_metadata(
        WeightSource::url("http://127.0.0.1:1/m.safetensors",
                          {{"Authorization", "Bearer secret-value\r\nX-Injected: yes"}}));
  });
  EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
  EXPECT_NE(std::string(e.what()).find("the source's headers: the value of 'Authorization' holds a "
                                       "control character"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(std::string(e.what()).find("secret-value"), std::string::npos) << e.what();
}

TEST(ConfigRanges, TheBoundsThemselvesAreAccepted) {
  EXPECT_NO_THROW(make_weight_loader({.num_threads = 1, .max_staging_bytes = 4096}));
  EXPECT_NO_THROW(make_weight_loader({.max_concurrent_downloads = kMaxConcurrentDownloads,
                                      .download_chunk_bytes = kMinChunkBytes,
                                      .download_timeout_seconds = kMaxDownloadTimeoutSeconds,
                                      .download_retries = kMaxDownloadRetries,
                                      .num_threads = 2,
                                      .read_chunk_bytes = kMaxChunkBytes}));
}

TEST(ConfigRanges, AThreadTheSystemRefusesIsAnErrorNotATerminate) {
  int started = 0;
  const ThreadPool::ThreadStart refuse_the_third = [&](std::function<void()> work) {
    if (++started == 3)
      throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
    return std::thread(std::move(work));
  };
  const Error e = error_of([&] { ThreadPool pool(8, refuse_the_third); });
  EXPECT_EQ(e.code(), ErrorCode::limit_exceeded) << e.what();
  EXPECT_NE(std::string(e.what()).find("the system refused worker thread 3 of 8"),
            std::string::npos)
      << e.what();
  // The pool still works when every thread starts.
  started = 0;
  ThreadPool pool(2, [&](std::function<void()> work) {
    ++started;
    return std::thread(std::move(work));
  });
  EXPECT_EQ(pool.submit([] { return 7; }).get(), 7);
  EXPECT_EQ(started, 2);
}

}  // namespace
}  // namespace ballast::test
