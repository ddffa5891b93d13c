// The URL object cache, preload and `ballast fetch` against Debian's nginx on 127.0.0.1: with
// caching on an object that a load reads whole (or preload) is downloaded once (a second loader
// sends only a HEAD), a changed object is downloaded again, a cached object loads with the server
// gone, the size bound evicts least recently used objects but never one a loader is using, a failed
// download leaves nothing in the cache, and preload with caching off holds the objects in memory so
// later loads fetch nothing.
#include <gtest/gtest.h>

#include <fstream>

#include "ballast/ballast.hpp"
#include "remote/cache_files.hpp"
#include "support/nginx_server.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kTensorBytes = 4 << 20;

// Two 4 MiB tensors whose bytes depend on `seed`.
std::string two_tensor_file(int seed) {
  std::string a(kTensorBytes, '\0'), b(kTensorBytes, '\0');
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<char>(i * 7 + static_cast<size_t>(seed));
    b[i] = static_cast<char>(i * 13 + 1 + static_cast<size_t>(seed));
  }
  return safetensors_file({{"a", "U8", {kTensorBytes}, a}, {"b", "U8", {kTensorBytes}, b}});
}

std::string tensor_bytes(const Tensor& t) {
  return std::string(reinterpret_cast<const char*>(t.data()), t.nbytes());
}

// The blobs in a cache folder.
std::vector<fs::path> blobs(const fs::path& cache) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache / "objects", ec))
    if (e.path().extension() == ".blob") out.push_back(e.path());
  return out;
}

// Everything in a cache folder that is neither a finished blob, its record nor its lock.
std::vector<fs::path> leftovers(const fs::path& cache) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache / "objects", ec)) {
    const auto ext = e.path().extension();
    if (ext != ".blob" && ext != ".json" && ext != ".lock") out.push_back(e.path());
  }
  return out;
}

class ObjectCacheTest : public testing::Test {
 protected:
  WeightLoaderConfig config(bool caching = true, uint64_t max_size = 0) const {
    WeightLoaderConfig c;
    c.enable_caching = caching;
    c.cache_dir = cache_.path();
    c.max_cache_size = max_size;
    c.download_timeout_seconds = 10;
    c.download_retries = 1;
    c.download_chunk_bytes = 1 << 20;  // several concurrent ranges per download
    return c;
  }
  std::string publish(const std::string& name, int seed) {
    write_file(server_.files() / name, two_tensor_file(seed));
    return server_.url("files/" + name);
  }
  static TensorSpec spec(const std::string& url, const std::string& name) {
    return TensorSpec{.name = name, .source = WeightSource::url(url)};
  }

  NginxServer server_{std::nullopt};
  TempDir cache_;
};

TEST_F(ObjectCacheTest, DownloadsOnceThenRevalidatesWithAHead) {
  BALLAST_REQUIRE_NGINX(server_);
  const std::string url = publish("m.safetensors", 1);
  const std::string want = two_tensor_file(1).substr(two_tensor_file(1).size() - kTensorBytes);
  {
    auto loader = make_weight_loader(config());
    auto both = loader->load_tensors({spec(url, "a"), spec(url, "b")});  // the whole file
    EXPECT_EQ(tensor_bytes(*both[1]), want);
  }
  ASSERT_EQ(blobs(cache_.path()).size(), 1u);
  EXPECT_EQ(read_file(blobs(cache_.path())[0]), two_tensor_file(1));
  server_.settled_body_bytes();
  server_.clear_log();
  auto again = make_weight_loader(config());
  EXPECT_EQ(tensor_bytes(*again->load_tensor(spec(url, "b"))), want);
  EXPECT_EQ(server_.settled_body_bytes(), 0u);
  for (const auto& r : server_.requests()) EXPECT_EQ(r.method, "HEAD") << r.uri;
}

TEST_F(ObjectCacheTest, ChangedObjectIsDownloadedAgain) {
  BALLAST_REQUIRE_NGINX(server_);
  const std::string url = publish("m.safetensors", 1);
  make_weight_loader(config())->preload(WeightSource::url(url));
  publish("m.safetensors", 2);
  // nginx's ETag is the modification time and size: make sure the time moves.
  fs::last_write_time(server_.files() / "m.safetensors",
                      fs::file_time_type::clock::now() + std::chrono::seconds(5));
  auto loader = make_weight_loader(config());
  loader->preload(WeightSource::url(url));
  auto tensor = loader->load_tensor(spec(url, "a"));
  EXPECT_EQ(tensor_bytes(*tensor),
            two_tensor_file(2).substr(two_tensor_file(2).size() - 2 * kTensorBytes, kTensorBytes));
  ASSERT_EQ(blobs(cache_.path()).size(), 1u);
  EXPECT_EQ(read_file(blobs(cache_.path())[0]), two_tensor_file(2));
}

TEST_F(ObjectCacheTest, CachedObjectLoadsWithTheServerGone) {
  auto server = std::make_unique<NginxServer>(std::nullopt);
  BALLAST_REQUIRE_NGINX(*server);
  write_file(server->files() / "m.safetensors", two_tensor_file(3));
  const std::string url = server->url("files/m.safetensors");
  make_weight_loader(config())->preload(WeightSource::url(url));
  server.reset();
  auto tensor = make_weight_loader(config())->load_tensor(spec(url, "b"));
  EXPECT_EQ(tensor_bytes(*tensor),
            two_tensor_file(3).substr(two_tensor_file(3).size() - kTensorBytes));
  // Without caching there is nothing to fall back on.
  EXPECT_THROW(make_weight_loader(config(false))->load_tensor(spec(url, "b")), Error);
}

// The cache's names are predictable (the sha256 of the URL): a symlink planted at one is never
// followed. One at the download's .incomplete name is replaced by a new file; one at the lock
// fails the load; the file they point to is untouched either way.
TEST_F(ObjectCacheTest, PlantedSymlinksAtTheCachesNamesAreNeverFollowed) {
  BALLAST_REQUIRE_NGINX(server_);
  const std::string url = publish("m.safetensors", 4);
  make_weight_loader(config())->preload(WeightSource::url(url));
  ASSERT_EQ(blobs(cache_.path()).size(), 1u);
  const fs::path blob = blobs(cache_.path())[0];
  TempDir elsewhere;
  const fs::path victim = elsewhere / "victim";
  write_file(victim, "precious");

  fs::remove_all(cache_.path() / "objects");
  fs::create_directories(cache_.path() / "objects");
  fs::create_symlink(victim, blob.string() + ".incomplete");
  auto loader = make_weight_loader(config());
  loader->preload(WeightSource::url(url));
  auto tensor = loader->load_tensor(spec(url, "a"));
  EXPECT_EQ(tensor_bytes(*tensor),
            two_tensor_file(4).substr(two_tensor_file(4).size() - 2 * kTensorBytes, kTensorBytes));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(blob)));
  EXPECT_EQ(read_file(victim), "precious");

  fs::remove_all(cache_.path() / "objects");
  fs::create_directories(cache_.path() / "objects");
  fs::path lock = blob;
  lock.replace_extension(".lock");
  fs::create_symlink(victim, lock);
  EXPECT_THROW(make_weight_loader(config())->preload(WeightSource::url(url)), Error);
  EXPECT_EQ(read_file(victim), "precious");
  EXPECT_FALSE(fs::exists(blob));
}

TEST_F(ObjectCacheTest, SizeBoundEvictsLeastRecentlyUsedButNeverAnObjectInUse) {
  BALLAST_REQUIRE_NGINX(server_);
  const uint64_t file_bytes = two_tensor_file(0).size();
  const uint64_t bound = file_bytes * 3 / 2;  // room for one object and a half
  const std::string a = publish("a.safetensors", 1), b = publish("b.safetensors", 2),
                    c = publish("c.safetensors", 3);
  auto first = make_weight_loader(config(true, bound));
  first->preload(WeightSource::url(a));
  first.reset();  // a: cached, not in use
  auto holder = make_weight_loader(config(true, bound));
  holder->preload(WeightSource::url(b));  // b: in use while `holder` lives; a is evicted
  EXPECT_EQ(blobs(cache_.path()).size(), 1u);
  auto third = make_weight_loader(config(true, bound));
  third->preload(WeightSource::url(c));  // over the bound, but b and c are both in use
  EXPECT_EQ(blobs(cache_.path()).size(), 2u);
  holder.reset();
  third.reset();
  auto fourth = make_weight_loader(config(true, bound));
  fourth->preload(WeightSource::url(a));  // a again: b (least recent) and then c go
  ASSERT_EQ(blobs(cache_.path()).size(), 1u);
  EXPECT_EQ(read_file(blobs(cache_.path())[0]), two_tensor_file(1));
}

TEST_F(ObjectCacheTest, FailedDownloadsLeaveNothingBehind) {
  const fs::path blob = cache_.path() / "x.blob";
  fs::create_directories(cache_.path());
  const std::string bytes(1000, 'x');
  auto deliver = [&](size_t n) {
    return
        [&, n](uint64_t, const ByteSink& sink) { sink(std::as_bytes(std::span(bytes.data(), n))); };
  };
  const ResumeProof by_sha256;  // the Hub's way: a partial is proven by the whole's sha256
  auto expect_integrity = [&](auto fetch, std::optional<std::string> sha) {
    try {
      download_into(real_os(), blob, bytes.size(), sha, "x", fetch, {}, &by_sha256);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::integrity) << e.what();
    }
    EXPECT_FALSE(fs::exists(blob));
    EXPECT_TRUE(fs::is_empty(cache_.path()));
  };
  expect_integrity(deliver(999), std::nullopt);  // short
  expect_integrity(
      [&](uint64_t, const ByteSink& sink) {
        sink(std::as_bytes(std::span(bytes.data(), 1000)));
        sink(std::as_bytes(std::span(bytes.data(), 1)));
      },
      std::nullopt);                                      // long
  expect_integrity(deliver(1000), std::string(64, '0'));  // wrong sha256
  // A network failure before any byte, or of a download that cannot be proven (no checkpoint
  // kept, no sha256) or may not resume, leaves nothing.
  auto dropped = [](uint64_t, const ByteSink&) { throw Error(ErrorCode::network, "dropped"); };
  EXPECT_THROW(
      download_into(real_os(), blob, bytes.size(), std::nullopt, "x", dropped, {}, &by_sha256),
      Error);
  EXPECT_TRUE(fs::is_empty(cache_.path()));
  auto dropped_after = [&](uint64_t, const ByteSink& sink) {
    sink(std::as_bytes(std::span(bytes.data(), 600)));
    throw Error(ErrorCode::network, "dropped");
  };
  EXPECT_THROW(
      download_into(real_os(), blob, bytes.size(), std::nullopt, "x", dropped_after, {}, nullptr),
      Error);
  EXPECT_TRUE(fs::is_empty(cache_.path()));
  download_into(real_os(), blob, bytes.size(), std::nullopt, "x", deliver(1000), {}, &by_sha256);
  EXPECT_EQ(read_file(blob), bytes);
}

// A resumable download broken off on the network keeps its bytes as `.incomplete` and their
// checkpoint; the next one is asked only for the rest, and the sha256 covers the kept bytes.
TEST_F(ObjectCacheTest, ANetworkFailureLeavesAPartialThatTheNextDownloadContinues) {
  const fs::path blob = cache_.path() / "x.blob";
  fs::create_directories(cache_.path());
  std::string bytes(1000, 'x');
  bytes[10] = 'y';
  std::optional<PartialCheckpoint> kept;
  const ResumeProof checkpoints{.recorded = [&] { return kept; },
                                .record = [&](const PartialCheckpoint& c) { kept = c; }};
  EXPECT_THROW(download_into(
                   real_os(), blob, bytes.size(), std::nullopt, "x",
                   [&](uint64_t from, const ByteSink& sink) {
                     EXPECT_EQ(from, 0u);
                     sink(std::as_bytes(std::span(bytes.data(), 600)));
                     throw Error(ErrorCode::network, "dropped");
                   },
                   {}, &checkpoints),
               Error);
  EXPECT_EQ(read_file(blob.string() + ".incomplete"), bytes.substr(0, 600));
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->length, 600u);
  std::vector<uint64_t> progress;
  const std::string sha = download_into(
      real_os(), blob, bytes.size(),
      sha256_hex(std::as_bytes(std::span(bytes.data(), bytes.size()))), "x",
      [&](uint64_t from, const ByteSink& sink) {
        EXPECT_EQ(from, 600u);
        sink(std::as_bytes(std::span(bytes.data() + from, bytes.size() - from)));
      },
      [&](uint64_t done) { progress.push_back(done); }, &checkpoints);
  EXPECT_EQ(read_file(blob), bytes);
  EXPECT_EQ(progress.front(), 600u);
  EXPECT_EQ(progress.back(), 1000u);
  EXPECT_FALSE(fs::exists(blob.string() + ".incomplete"));
}

// A partial download is continued after the bytes its checkpoint proves and no further: bytes
// after them (written after the last checkpoint by a killed process) are fetched again, and a
// partial whose proven bytes no longer hash to the checkpoint starts from zero.
TEST_F(ObjectCacheTest, APartialIsContinuedOnlyAfterTheBytesItsCheckpointProves) {
  const fs::path blob = cache_.path() / "x.blob";
  const fs::path partial = blob.string() + ".incomplete";
  fs::create_directories(cache_.path());
  std::string bytes(1000, 'x');
  bytes[10] = 'y';
  const std::optional<PartialCheckpoint> kept =
      PartialCheckpoint{600, sha256_hex(std::as_bytes(std::span(bytes.data(), 600)))};
  const ResumeProof checkpoints{.recorded = [&] { return kept; },
                                .record = [](const PartialCheckpoint&) {}};
  auto download_expecting = [&](uint64_t expected_from) {
    download_into(
        real_os(), blob, bytes.size(), std::nullopt, "x",
        [&](uint64_t from, const ByteSink& sink) {
          EXPECT_EQ(from, expected_from);
          sink(std::as_bytes(std::span(bytes.data() + from, bytes.size() - from)));
        },
        {}, &checkpoints);
    EXPECT_EQ(read_file(blob), bytes);
    fs::remove(blob);
  };
  write_file(partial, bytes.substr(0, 600) + std::string(200, 'z'));
  download_expecting(600);
  std::string wrong = bytes.substr(0, 600);
  wrong[10] = 'x';
  write_file(partial, wrong);
  download_expecting(0);
  EXPECT_TRUE(fs::is_empty(cache_.path()));
}

TEST_F(ObjectCacheTest, ServerErrorsMidDownloadLeaveNoPartialBlob) {
  BALLAST_REQUIRE_NGINX(server_);
  const std::string url = server_.url("files/missing.safetensors");
  EXPECT_THROW(make_weight_loader(config())->load_tensor(spec(url, "a")), Error);
  EXPECT_TRUE(blobs(cache_.path()).empty());
  EXPECT_TRUE(leftovers(cache_.path()).empty());
}

TEST_F(ObjectCacheTest, PreloadWithCachingOffHoldsTheObjectInMemory) {
  BALLAST_REQUIRE_NGINX(server_);
  const std::string url = publish("m.safetensors", 4);
  auto loader = make_weight_loader(config(false));
  loader->preload(WeightSource::url(url));
  EXPECT_EQ(server_.settled_body_bytes(), two_tensor_file(4).size());
  server_.settled_body_bytes();
  server_.clear_log();
  for (const char* name : {"a", "b"}) loader->load_tensor(spec(url, name));
  EXPECT_EQ(server_.settled_body_bytes(), 0u);
  EXPECT_TRUE(server_.requests().empty());
  EXPECT_TRUE(blobs(cache_.path()).empty());
}

TEST_F(ObjectCacheTest, PreloadWithCachingOnDownloadsWithProgress) {
  BALLAST_REQUIRE_NGINX(server_);
  const std::string url = publish("m.safetensors", 5);
  WeightLoaderConfig c = config();
  std::mutex mutex;
  std::vector<DownloadProgress> seen;
  c.on_download_progress = [&](const DownloadProgress& p) {
    std::lock_guard lock(mutex);
    seen.push_back(p);
  };
  auto loader = make_weight_loader(c);
  loader->preload(WeightSource::url(url));
  ASSERT_EQ(blobs(cache_.path()).size(), 1u);
  ASSERT_GE(seen.size(), 2u);  // 1 MiB ranges: several pieces
  EXPECT_EQ(seen.back().bytes_done, two_tensor_file(5).size());
  EXPECT_EQ(seen.back().bytes_total, two_tensor_file(5).size());
  EXPECT_EQ(seen.back().source, url);
  server_.settled_body_bytes();
  server_.clear_log();
  loader->load_tensor(spec(url, "b"));
  EXPECT_EQ(server_.settled_body_bytes(), 0u);
}

TEST_F(ObjectCacheTest, CliFetchFillsTheCacheWithProgress) {
  BALLAST_REQUIRE_NGINX(server_);
  const std::string url = publish("m.safetensors", 6);
  const std::string dir = shell_quote(cache_.path().string());
  auto fetch = run_command(cli_path() + " fetch --cache-dir " + dir + " " + shell_quote(url));
  ASSERT_EQ(fetch.exit_code, 0) << fetch.err;
  EXPECT_NE(fetch.err.find("100%"), std::string::npos) << fetch.err;
  EXPECT_NE(fetch.out.find("2 tensors"), std::string::npos) << fetch.out;
  ASSERT_EQ(blobs(cache_.path()).size(), 1u);
  server_.settled_body_bytes();
  server_.clear_log();
  auto hash = run_command(cli_path() + " hash --cache-dir " + dir + " " + shell_quote(url));
  ASSERT_EQ(hash.exit_code, 0) << hash.err;
  EXPECT_EQ(server_.settled_body_bytes(), 0u);
  auto quiet = run_command(cli_path() + " fetch -q --cache-dir " + dir + " " + shell_quote(url));
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
}

}  // namespace
}  // namespace ballast::test
