// Faults of the file system under the download cache, injected through the loader's Os seam
// (support/faulty_os.hpp) while a URL is downloaded from Debian's nginx on 127.0.0.1: a full disk
// while the blob is written, a failing fsync and a failing rename into place each fail the load
// with Error(io) naming the cache's file, and leave neither a blob nor a partial download (those
// are not network failures, so nothing is kept to resume); with the faults gone, the next load
// downloads the object and caches it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ballast/ballast.hpp"
#include "loader/default_loader.hpp"
#include "support/faulty_os.hpp"
#include "support/nginx_server.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

namespace fs = std::filesystem;

constexpr size_t kBytes = 4 << 20;

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 11 + 5);
  return s;
}

// The names in the cache's objects folder, locks aside.
std::vector<std::string> cached_names(const fs::path& cache) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache / "objects", ec))
    if (e.path().extension() != ".lock") names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class CacheOsFaults : public testing::Test {
 protected:
  void SetUp() override {
    write_file(server_.files() / "m.safetensors",
               safetensors_file({{"a", "U8", {kBytes}, pattern(kBytes)}}));
    url_ = server_.url("files/m.safetensors");
  }

  WeightLoaderConfig config() const {
    WeightLoaderConfig c;
    c.enable_caching = true;
    c.cache_dir = cache_.path();
    c.download_timeout_seconds = 10;
    c.download_retries = 1;
    return c;
  }

  // Loads the whole file (so it is downloaded into the cache) through a loader on `os`; the
  // error that fails the load, if any.
  std::optional<Error> load_error(std::shared_ptr<const Os> os) const {
    auto loader = make_default_loader_with_os(config(), std::move(os));
    try {
      const auto t = loader->load_tensor({.name = "a", .source = WeightSource::url(url_)});
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(t->data()), t->nbytes()),
                pattern(kBytes));
    } catch (const Error& e) {
      return e;
    }
    return std::nullopt;
  }

  // The load on `os` fails with Error(io) naming a file of the cache, leaves no blob and no
  // partial download, and a load without faults then caches the object.
  void expect_io_failure_leaving_nothing(std::shared_ptr<const Os> os) {
    const auto error = load_error(std::move(os));
    ASSERT_TRUE(error.has_value()) << "the fault went unnoticed";
    EXPECT_EQ(error->code(), ErrorCode::io) << error->what();
    EXPECT_NE(std::string(error->what()).find((cache_.path() / "objects").string()),
              std::string::npos)
        << error->what();
    EXPECT_EQ(cached_names(cache_.path()), std::vector<std::string>{});
    EXPECT_EQ(load_error(real_os()), std::nullopt);
    const auto names = cached_names(cache_.path());
    ASSERT_EQ(names.size(), 2u);  // <hash>.blob and <hash>.json
    EXPECT_TRUE(names[0].ends_with(".blob")) << names[0];
    EXPECT_TRUE(names[1].ends_with(".json")) << names[1];
  }

  NginxServer server_{std::nullopt};
  TempDir cache_;
  std::string url_;
};

TEST_F(CacheOsFaults, AFullDiskWhileTheBlobIsWrittenLeavesNothing) {
  BALLAST_REQUIRE_NGINX(server_);
  auto os = std::make_shared<FaultyOs>();
  os->fail_writes_after = 1 << 20;  // the small records fit; the blob does not
  expect_io_failure_leaving_nothing(os);
  EXPECT_GT(os->write_calls, 0);
}

TEST_F(CacheOsFaults, AFailingSyncLeavesNothing) {
  BALLAST_REQUIRE_NGINX(server_);
  auto os = std::make_shared<FaultyOs>();
  os->fail_fsync = true;
  expect_io_failure_leaving_nothing(os);
  EXPECT_EQ(os->fsync_calls, 1);
}

TEST_F(CacheOsFaults, AFailingRenameIntoPlaceLeavesNothing) {
  BALLAST_REQUIRE_NGINX(server_);
  auto os = std::make_shared<FaultyOs>();
  os->fail_renames_of = ".incomplete";
  expect_io_failure_leaving_nothing(os);
  EXPECT_GT(os->rename_calls, 0);
}

}  // namespace
}  // namespace ballast::test
