// Remote reads with caching on fetch only what they need (issue 27), counted in the bytes each
// server sent: get_metadata and `ballast inspect` of a 64 MiB safetensors file over a URL
// (nginx), hf:// (the Hub stand-in) and s3:// (moto behind the SigV4 proxy) read its header by
// ranges and leave no blob in the cache; a shard index fetches each shard's header only; a load
// of a few tensors reads their ranges and leaves the cache alone; a load of the whole file
// downloads it into the cache once, and later metadata comes from the cached blob.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "ballast/ballast.hpp"
#include "support/nginx_server.hpp"
#include "support/process.hpp"
#include "support/s3_server.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr size_t kTensors = 16;
constexpr uint64_t kTensorBytes = 4 << 20;  // 16 x 4 MiB: a 64 MiB file
// What parsing a header by ranges may fetch: a 64 KiB read-ahead from the start, with room.
constexpr uint64_t kHeaderReads = 128 << 10;

std::string tensor_name(size_t i) { return "layer." + std::to_string(100 + i); }

// `count` tensors of 4 MiB; only a few bytes of each are not zero (cheap to write and hash).
std::string big_file(size_t count, int seed) {
  std::vector<StTensor> tensors;
  for (size_t i = 0; i < count; ++i) {
    std::string bytes(kTensorBytes, '\0');
    for (size_t k = 0; k < bytes.size(); k += 4096)
      bytes[k] = static_cast<char>(k / 4096 + i + seed);
    tensors.push_back({tensor_name(i), "U8", {kTensorBytes}, std::move(bytes)});
  }
  return safetensors_file(tensors);
}

// Four 16 MiB shards and their index, written into `folder`.
void write_sharded(const fs::path& folder) {
  json weight_map = json::object();
  for (int s = 0; s < 4; ++s) {
    const std::string shard = "model-0000" + std::to_string(s + 1) + "-of-00004.safetensors";
    std::vector<StTensor> tensors;
    for (size_t i = 0; i < 4; ++i) {
      const std::string name = tensor_name(4 * static_cast<size_t>(s) + i);
      tensors.push_back({name, "U8", {kTensorBytes}, std::string(kTensorBytes, 'x')});
      weight_map[name] = shard;
    }
    write_file(folder / shard, safetensors_file(tensors));
  }
  write_file(folder / "model.safetensors.index.json",
             json{{"metadata", json::object()}, {"weight_map", weight_map}}.dump());
}

// Every regular file under `folder` (recursively), with its size.
std::map<std::string, uint64_t> files_under(const fs::path& folder) {
  std::map<std::string, uint64_t> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(folder, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec) && it->path().extension() != ".lock")
      out[fs::relative(it->path(), folder).string()] = it->file_size(ec);
  return out;
}

// Whether any cached file under `folder` is as large as a tensor (a downloaded shard).
bool holds_a_shard(const fs::path& folder) {
  for (const auto& [name, size] : files_under(folder))
    if (size >= kTensorBytes) return true;
  return false;
}

WeightLoaderConfig caching_config(const fs::path& cache) {
  WeightLoaderConfig c;
  c.cache_dir = cache;
  c.download_timeout_seconds = 20;
  c.download_retries = 1;
  return c;
}

std::vector<TensorSpec> specs_of(const WeightSource& source, size_t first, size_t count) {
  std::vector<TensorSpec> specs;
  for (size_t i = first; i < first + count; ++i)
    specs.push_back({.name = tensor_name(i), .source = source});
  return specs;
}

class UrlReads : public testing::Test {
 protected:
  void SetUp() override {
    BALLAST_REQUIRE_NGINX(server_);
    write_file(server_.files() / "big.safetensors", big_file(kTensors, 1));
    write_sharded(server_.files() / "sharded");
  }
  uint64_t served() const {
    const uint64_t bytes = server_.settled_body_bytes();
    server_.clear_log();
    return bytes;
  }

  NginxServer server_{std::nullopt};
  TempDir cache_;
};

TEST_F(UrlReads, MetadataAndInspectReadOnlyTheHeader) {
  const std::string url = server_.url("files/big.safetensors");
  served();
  auto meta =
      make_weight_loader(caching_config(cache_.path()))->get_metadata(WeightSource::url(url));
  EXPECT_EQ(meta.tensors.size(), kTensors);
  EXPECT_LT(served(), kHeaderReads);
  EXPECT_FALSE(holds_a_shard(cache_.path()));
  auto r = run_command(cli_path() + " inspect --json --cache-dir " +
                       shell_quote(cache_.path().string()) + " " + url);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["tensors"].size(), kTensors);
  EXPECT_LT(served(), kHeaderReads);
  EXPECT_TRUE(files_under(cache_.path()).empty());
}

TEST_F(UrlReads, HashingOrConvertingAWholeCheckpointDownloadsEachByteOnce) {
  const std::string url = server_.url("files/big.safetensors");
  const uint64_t size = fs::file_size(server_.files() / "big.safetensors");
  const std::string cache = " --cache-dir " + shell_quote(cache_.path().string()) + " ";
  served();
  auto r = run_command(cli_path() + " hash -q" + cache + url);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The whole file once (and its header by ranges before), not half by ranges then all of it.
  EXPECT_LT(served(), size + kHeaderReads);
  EXPECT_TRUE(holds_a_shard(cache_.path()));
  TempDir out;
  r = run_command(cli_path() + " convert -q" + cache + url + " " +
                  shell_quote((out / "c.safetensors").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(served(), kHeaderReads);  // from the cache
}

TEST_F(UrlReads, AnIndexFetchesOnlyEachShardsHeader) {
  const std::string index = server_.url("files/sharded/model.safetensors.index.json");
  served();
  auto meta =
      make_weight_loader(caching_config(cache_.path()))->get_metadata(WeightSource::url(index));
  EXPECT_EQ(meta.tensors.size(), kTensors);
  const uint64_t index_bytes =
      fs::file_size(server_.files() / "sharded/model.safetensors.index.json");
  EXPECT_LT(served(), index_bytes + 4 * kHeaderReads);
  EXPECT_FALSE(holds_a_shard(cache_.path()));  // the small index is cached, no shard is
}

TEST_F(UrlReads, AFewTensorsAreReadByRangesAndAWholeLoadFillsTheCache) {
  const auto source = WeightSource::url(server_.url("files/big.safetensors"));
  served();
  uint64_t few = 0;
  {
    auto loader = make_weight_loader(caching_config(cache_.path()));
    loader->load_tensors(specs_of(source, 3, 2));  // 8 of 64 MiB
    few = served();
    EXPECT_GE(few, 2 * kTensorBytes);
    EXPECT_LT(few, 2 * kTensorBytes + kHeaderReads);
    EXPECT_FALSE(holds_a_shard(cache_.path()));
    // Then the whole file: downloaded into the cache once (after the header bytes read
    // already), the tensors read from there.
    auto all = loader->load_tensors(specs_of(source, 0, kTensors));
    EXPECT_EQ(all.size(), kTensors);
  }
  const uint64_t file_bytes = fs::file_size(server_.files() / "big.safetensors");
  EXPECT_EQ(few + served(), file_bytes + 2 * kTensorBytes);
  EXPECT_TRUE(holds_a_shard(cache_.path()));
  // Later loaders answer from the blob: a HEAD, no body.
  auto again = make_weight_loader(caching_config(cache_.path()));
  EXPECT_EQ(again->get_metadata(source).tensors.size(), kTensors);
  again->load_tensors(specs_of(source, 0, 2));
  EXPECT_EQ(served(), 0u);
}

TEST_F(UrlReads, PreloadDownloadsAnIndexsShardsIntoTheCache) {
  const auto index = WeightSource::url(server_.url("files/sharded/model.safetensors.index.json"));
  make_weight_loader(caching_config(cache_.path()))->preload(index);
  uint64_t blobs = 0;
  for (const auto& [name, size] : files_under(cache_.path())) blobs += size >= kTensorBytes;
  EXPECT_EQ(blobs, 4u);
}

class HubReads : public testing::Test {
 protected:
  void SetUp() override {
    write_file(repos_ / "org/big/model.safetensors", big_file(kTensors, 2));
    write_sharded(repos_ / "org/sharded");
    server_ = std::make_unique<Process>(std::vector<std::string>{
        "/usr/bin/python3", BALLAST_SOURCE_DIR "/tests/servers/hub_server.py",
        repos_.path().string()});
    auto line = server_->read_line(std::chrono::seconds(20));
    ASSERT_TRUE(line) << "the hub server did not start";
    int port = 0;
    std::istringstream(*line) >> port;
    endpoint_ = "http://127.0.0.1:" + std::to_string(port);
    setenv("HF_ENDPOINT", endpoint_.c_str(), 1);
    setenv("HF_HUB_CACHE", (home_ / "hub").c_str(), 1);
    unsetenv("HF_TOKEN");
    unsetenv("HF_HUB_OFFLINE");
  }
  void TearDown() override {
    for (const char* name : {"HF_ENDPOINT", "HF_HUB_CACHE"}) unsetenv(name);
  }
  // The body bytes the CDN has served, over all files.
  uint64_t cdn_bytes() {
    auto r = run_command("/usr/bin/python3 -c " +
                         shell_quote("import urllib.request,sys; sys.stdout.write(urllib.request."
                                     "urlopen('" +
                                     endpoint_ + "/stats').read().decode())"));
    const json stats = json::parse(r.out);  // alive for the loop (items() is a view)
    uint64_t total = 0;
    for (const auto& [file, bytes] : stats["cdn_bytes"].items()) total += bytes.get<uint64_t>();
    return total;
  }

  TempDir repos_, home_, objects_;
  std::unique_ptr<Process> server_;
  std::string endpoint_;
};

TEST_F(HubReads, MetadataInspectAndIndexesReadOnlyHeaders) {
  auto loader = make_weight_loader(caching_config(objects_.path()));
  const auto file = WeightSource::hugging_face("org/big", "model.safetensors");
  EXPECT_EQ(loader->get_metadata(file).tensors.size(), kTensors);
  EXPECT_LT(cdn_bytes(), kHeaderReads);
  auto r = run_command(cli_path() + " inspect --json hf://org/big/model.safetensors");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["tensors"].size(), kTensors);
  EXPECT_LT(cdn_bytes(), 2 * kHeaderReads);
  // The whole repo through its index: the index (a small, non-LFS file, cached) and each
  // shard's header.
  const uint64_t before = cdn_bytes();
  EXPECT_EQ(loader->get_metadata(WeightSource::hugging_face("org/sharded", "")).tensors.size(),
            kTensors);
  EXPECT_LT(cdn_bytes() - before, 4 * kHeaderReads);
  EXPECT_FALSE(holds_a_shard(home_ / "hub"));
}

TEST_F(HubReads, AFewTensorsAreReadByRangesAndPreloadFillsTheCache) {
  const auto file = WeightSource::hugging_face("org/big", "model.safetensors");
  auto loader = make_weight_loader(caching_config(objects_.path()));
  loader->load_tensors(specs_of(file, 0, 2));
  EXPECT_LT(cdn_bytes(), 2 * kTensorBytes + kHeaderReads);
  EXPECT_FALSE(holds_a_shard(home_ / "hub"));
  make_weight_loader(caching_config(objects_.path()))->preload(file);
  EXPECT_TRUE(holds_a_shard(home_ / "hub"));
  const uint64_t before = cdn_bytes();
  auto meta = make_weight_loader(caching_config(objects_.path()))->get_metadata(file);
  EXPECT_EQ(meta.tensors.size(), kTensors);
  EXPECT_EQ(cdn_bytes(), before);  // a commit's cached file: from the cache
}

S3Server& s3() { return process_wide<S3Server>(); }

TEST(S3Reads, MetadataAndIndexesReadOnlyHeaders) {
  BALLAST_REQUIRE_S3(s3());
  TempDir files, cache, home;
  write_file(files / "big.safetensors", big_file(kTensors, 3));
  write_sharded(files / "sharded");
  s3().upload("public", files.path(), "reads/");
  const std::string saved_home = std::getenv("HOME") ? std::getenv("HOME") : "";
  setenv("HOME", home.path().c_str(), 1);
  setenv("AWS_NO_SIGN_REQUEST", "true", 1);  // the public bucket, read unsigned
  WeightLoaderConfig c = caching_config(cache.path());
  const auto s3_source = [&](const std::string& key) {
    return WeightSource::s3("public", key, S3Server::kRegion, s3().endpoint());
  };
  s3().clear_log();
  auto loader = make_weight_loader(c);
  EXPECT_EQ(loader->get_metadata(s3_source("reads/big.safetensors")).tensors.size(), kTensors);
  EXPECT_LT(s3().get_bytes(), kHeaderReads);
  EXPECT_EQ(
      loader->get_metadata(s3_source("reads/sharded/model.safetensors.index.json")).tensors.size(),
      kTensors);
  EXPECT_LT(s3().get_bytes(), 6 * kHeaderReads);
  EXPECT_FALSE(holds_a_shard(cache.path()));
  auto r = run_command(cli_path() + " inspect --json --cache-dir " +
                       shell_quote(cache.path().string()) + " --s3-endpoint " + s3().endpoint() +
                       " --s3-region " + S3Server::kRegion + " s3://public/reads/big.safetensors");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(s3().get_bytes(), 7 * kHeaderReads);
  EXPECT_FALSE(holds_a_shard(cache.path()));
  unsetenv("AWS_NO_SIGN_REQUEST");
  setenv("HOME", saved_home.c_str(), 1);
}

}  // namespace
}  // namespace ballast::test
