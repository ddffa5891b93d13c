// Hugging Face Hub sources against a Hub stand-in (tests/servers/hub_server.py on 127.0.0.1:
// the resolve endpoint with X-Repo-Commit / X-Linked-Etag / X-Linked-Size, a 302 to a second
// port playing the CDN, 401 for gated repos): the cache is written in huggingface_hub's
// layout, read offline with the server stopped, downloaded once by two processes at once,
// checked against the sha256; whole repos fetch only the shards they need.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "ballast/ballast.hpp"
#include "support/process.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * seed + 5);
  return s;
}

class HubServer : public testing::Test {
 protected:
  void SetUp() override {
    write_file(repos_ / "org/tiny/model.safetensors",
               safetensors_file({{"w", "U8", {4096}, pattern(4096, 3)}}));
    write_file(repos_ / "org/corrupt/model.safetensors",
               safetensors_file({{"w", "U8", {16}, pattern(16, 3)}}));
    write_file(repos_ / "gated/llama/model.safetensors",
               safetensors_file({{"w", "U8", {16}, pattern(16, 9)}}));
    write_file(repos_ / "org/sharded/model-00001-of-00002.safetensors",
               safetensors_file({{"x", "U8", {1000}, pattern(1000, 7)}}));
    write_file(repos_ / "org/sharded/model-00002-of-00002.safetensors",
               safetensors_file({{"y", "U8", {2000}, pattern(2000, 11)}}));
    write_file(repos_ / "org/sharded/model.safetensors.index.json",
               R"({"metadata": {"total_size": 3000}, "weight_map": {
                   "x": "model-00001-of-00002.safetensors",
                   "y": "model-00002-of-00002.safetensors"}})");
    // A header whose tensor shape needs 2 MiB but whose offsets span the 1 MiB file.
    write_file(repos_ / "org/hostile/model.safetensors",
               safetensors_file({{"w", "U8", {2 << 20}, std::string(1 << 20, 'x')}}));
    write_file(repos_ / "org/big/model.safetensors",
               safetensors_file({{"w", "U8", {24 << 20}, pattern(24 << 20, 13)}}));
    start();
    setenv("HF_HOME", (home_ / "hf").c_str(), 1);
    setenv("HF_HUB_CACHE", cache().c_str(), 1);
    unsetenv("HF_TOKEN");
    unsetenv("HF_HUB_OFFLINE");
  }

  void TearDown() override {
    for (const char* name :
         {"HF_ENDPOINT", "HF_HOME", "HF_HUB_CACHE", "HF_TOKEN", "HF_HUB_OFFLINE"})
      unsetenv(name);
  }

  void start() {
    server_ = std::make_unique<Process>(std::vector<std::string>{
        "/usr/bin/python3", BALLAST_SOURCE_DIR "/tests/servers/hub_server.py",
        repos_.path().string()});
    auto line = server_->read_line(std::chrono::seconds(20));
    ASSERT_TRUE(line) << "the hub server did not start";
    std::istringstream(*line) >> port_;
    endpoint_ = "http://127.0.0.1:" + std::to_string(port_);
    setenv("HF_ENDPOINT", endpoint_.c_str(), 1);
  }

  fs::path cache() const { return home_ / "hub"; }

  static WeightLoaderConfig config(bool caching = true) {
    WeightLoaderConfig c;
    c.enable_caching = caching;
    c.download_retries = 1;
    c.download_timeout_seconds = 10;
    return c;
  }

  std::string hash_of(const WeightSource& source, const std::string& name,
                      const WeightLoaderConfig& c) {
    return sha256_hex(*make_weight_loader(c)->load_tensor({.name = name, .source = source}));
  }

  std::string local_hash(const std::string& file, const std::string& name) {
    return hash_of(WeightSource::file(repos_ / file), name, {});
  }

  ErrorCode error_of(const WeightSource& source, const WeightLoaderConfig& c) {
    try {
      make_weight_loader(c)->load_tensor({.name = "w", .source = source});
    } catch (const Error& e) {
      return e.code();
    }
    ADD_FAILURE() << "expected an error";
    return ErrorCode::cancelled;
  }

  json stats() {
    auto r = run_command("/usr/bin/python3 -c " +
                         shell_quote("import urllib.request,sys; sys.stdout.write(urllib.request."
                                     "urlopen('" +
                                     endpoint_ + "/stats').read().decode())"));
    return json::parse(r.out);
  }

  static std::string commit_of(const std::string& repo) {
    return run_python(
        "import hashlib,sys; print(hashlib.sha1(sys.argv[1].encode()).hexdigest(), "
        "end='')",
        {repo});
  }

  TempDir repos_, home_;
  std::unique_ptr<Process> server_;
  int port_ = 0;
  std::string endpoint_;
};

TEST_F(HubServer, DownloadsIntoTheHuggingFaceHubLayout) {
  auto source = WeightSource::hugging_face("org/tiny", "model.safetensors");
  EXPECT_EQ(hash_of(source, "w", config()), local_hash("org/tiny/model.safetensors", "w"));
  const fs::path repo = cache() / "models--org--tiny";
  const std::string commit = commit_of("org/tiny");
  EXPECT_EQ(read_file(repo / "refs/main"), commit);
  const fs::path link = repo / "snapshots" / commit / "model.safetensors";
  ASSERT_TRUE(fs::is_symlink(link));
  const std::string sha =
      sha256_hex(std::as_bytes(std::span(read_file(repos_ / "org/tiny/model.safetensors").data(),
                                         read_file(repos_ / "org/tiny/model.safetensors").size())));
  EXPECT_EQ(fs::read_symlink(link), fs::path("../../blobs") / sha);
  EXPECT_EQ(read_file(link), read_file(repos_ / "org/tiny/model.safetensors"));
  for (const auto& item : fs::directory_iterator(repo / "blobs"))
    EXPECT_EQ(item.path().filename(), sha) << "left in blobs/";
  // A second loader finds the file in the cache: no second download.
  EXPECT_EQ(hash_of(source, "w", config()), local_hash("org/tiny/model.safetensors", "w"));
  EXPECT_EQ(stats()["cdn_gets"]["org/tiny/model.safetensors"], 1);
}

TEST_F(HubServer, RevisionMayBeACommit) {
  auto source = WeightSource::hugging_face("org/tiny", "model.safetensors", commit_of("org/tiny"));
  EXPECT_EQ(hash_of(source, "w", config()), local_hash("org/tiny/model.safetensors", "w"));
  EXPECT_EQ(error_of(WeightSource::hugging_face("org/tiny", "model.safetensors", "nope"), config()),
            ErrorCode::not_found);
}

TEST_F(HubServer, WholeRepoFetchesOnlyTheShardsItNeeds) {
  for (bool caching : {true, false}) {
    SCOPED_TRACE(caching);
    auto source = WeightSource::hugging_face("org/sharded", "");
    EXPECT_EQ(hash_of(source, "y", config(caching)),
              local_hash("org/sharded/model-00002-of-00002.safetensors", "y"));
  }
  json gets = stats()["cdn_gets"];
  EXPECT_FALSE(gets.contains("org/sharded/model-00001-of-00002.safetensors")) << gets;
  EXPECT_TRUE(gets.contains("org/sharded/model-00002-of-00002.safetensors")) << gets;
  auto meta =
      make_weight_loader(config())->get_metadata(WeightSource::hugging_face("org/sharded", ""));
  EXPECT_EQ(meta.tensors.size(), 2u);
}

TEST_F(HubServer, AnIndexLargerThanMaxHeaderBytesIsRefusedBeforeItIsDownloaded) {
  WeightLoaderConfig c = config();
  c.limits.max_header_bytes = 64;  // org/sharded's index is larger
  try {
    make_weight_loader(c)->get_metadata(WeightSource::hugging_face("org/sharded", ""));
    ADD_FAILURE() << "the index was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::limit_exceeded) << e.what();
  }
  std::error_code ec;
  EXPECT_TRUE(fs::is_empty(cache() / "models--org--sharded" / "blobs", ec) || ec);
}

TEST_F(HubServer, AShardALoadWouldRefuseIsProbedByRangesAndNeverDownloaded) {
  EXPECT_EQ(error_of(WeightSource::hugging_face("org/hostile", "model.safetensors"), config()),
            ErrorCode::invalid_format);
  std::error_code ec;
  EXPECT_TRUE(fs::is_empty(cache() / "models--org--hostile" / "blobs", ec) || ec)
      << "the refused shard (or a partial download of it) landed in the Hub cache";
}

TEST_F(HubServer, CachingOffReadsByRangesAndWritesNoCache) {
  auto source = WeightSource::hugging_face("org/tiny", "model.safetensors");
  EXPECT_EQ(hash_of(source, "w", config(false)), local_hash("org/tiny/model.safetensors", "w"));
  EXPECT_FALSE(fs::exists(cache() / "models--org--tiny" / "blobs"));
}

TEST_F(HubServer, GatedReposNeedATokenThatTheCdnNeverSees) {
  auto source = WeightSource::hugging_face("gated/llama", "model.safetensors");
  EXPECT_EQ(error_of(source, config()), ErrorCode::auth);
  write_file(home_ / "hf/token", "hf_test_token\n");
  EXPECT_EQ(hash_of(source, "w", config()), local_hash("gated/llama/model.safetensors", "w"));
  fs::remove(home_ / "hf/token");
  setenv("HF_TOKEN", "hf_test_token", 1);
  EXPECT_EQ(hash_of(source, "w", config(false)), local_hash("gated/llama/model.safetensors", "w"));
  const json s = stats();  // named: a range-for over a member of a temporary reads freed memory
  for (const auto& seen : s.at("cdn_auth")) EXPECT_EQ(seen, "");
}

TEST_F(HubServer, Sha256MismatchIsAnIntegrityErrorAndLeavesNothing) {
  auto source = WeightSource::hugging_face("org/corrupt", "model.safetensors");
  EXPECT_EQ(error_of(source, config()), ErrorCode::integrity);
  const fs::path blobs = cache() / "models--org--corrupt" / "blobs";
  if (fs::exists(blobs))
    for (const auto& item : fs::directory_iterator(blobs)) ADD_FAILURE() << item.path();
}

TEST_F(HubServer, OfflineReadsTheCacheWithTheServerStopped) {
  auto file = WeightSource::hugging_face("org/tiny", "model.safetensors");
  auto repo = WeightSource::hugging_face("org/sharded", "");
  const std::string want = local_hash("org/tiny/model.safetensors", "w");
  EXPECT_EQ(hash_of(file, "w", config()), want);
  make_weight_loader(config())->preload(repo);  // every shard into the cache
  server_->stop();
  setenv("HF_HUB_OFFLINE", "1", 1);
  EXPECT_EQ(hash_of(file, "w", config()), want);
  EXPECT_EQ(hash_of(repo, "x", config()),
            local_hash("org/sharded/model-00001-of-00002.safetensors", "x"));
  EXPECT_EQ(error_of(WeightSource::hugging_face("gated/llama", "model.safetensors"), config()),
            ErrorCode::not_found);
}

TEST_F(HubServer, TwoProcessesDownloadTheSameFileOnce) {
  const std::string hash = cli_path() + " hash --json hf://org/big/model.safetensors";
  auto r = run_command("(" + hash + " > " + shell_quote((home_ / "one").string()) + " & " + hash +
                       " > " + shell_quote((home_ / "two").string()) + "; wait)");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string want = local_hash("org/big/model.safetensors", "w");
  for (const char* out : {"one", "two"})
    EXPECT_EQ(json::parse(read_file(home_ / out))["tensors"]["w"]["sha256"], want) << out;
  // One download, in ranged pieces: each byte served once, and each process's header reads
  // (a header is parsed by ranges before a load decides to download; 64 KiB read-ahead each).
  const uint64_t size = fs::file_size(repos_ / "org/big/model.safetensors");
  const uint64_t served = stats()["cdn_bytes"]["org/big/model.safetensors"];
  EXPECT_GE(served, size);
  EXPECT_LE(served, size + 2 * (64 << 10));
}

TEST_F(HubServer, CliReadsWholeRepos) {
  auto r = run_command(cli_path() + " hash --json hf://org/sharded");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json tensors = json::parse(r.out)["tensors"];
  EXPECT_EQ(tensors["x"]["sha256"],
            local_hash("org/sharded/model-00001-of-00002.safetensors", "x"));
  EXPECT_EQ(tensors["y"]["sha256"],
            local_hash("org/sharded/model-00002-of-00002.safetensors", "y"));
}

}  // namespace
}  // namespace ballast::test
