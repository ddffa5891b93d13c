// S3 sources against a real S3-compatible server (moto behind a proxy that verifies every
// SigV4 signature with botocore; see support/s3_server.hpp), objects uploaded with boto3:
// every golden file hashes the same through S3 as from disk, a sliced load fetches only its
// rows, caching downloads an object once into the object cache, sharded indexes resolve shards
// beside them, wrong secrets and missing keys fail with S3's own error codes and no secret in
// the message (but where the credentials came from), session tokens, profile files, unsigned
// access to a public bucket only when asked for (AWS_NO_SIGN_REQUEST, --no-sign-request),
// virtual-hosted addressing (BUCKET.localhost), and the CLI reads s3:// sources.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <set>

#include "ballast/ballast.hpp"
#include "support/aws_environment.hpp"
#include "support/golden_cases.hpp"
#include "support/s3_server.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;

S3Server& server() { return process_wide<S3Server>(); }

WeightLoaderConfig remote_config() {
  WeightLoaderConfig config;
  config.enable_caching = false;
  config.download_timeout_seconds = 10;
  config.download_retries = 1;
  return config;
}

std::string pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * seed + 3);
  return s;
}

// Each test starts with the long-term keys in the environment, the server's endpoint and
// region, and an empty HOME (no ~/.aws of the machine's).
class S3SourceTest : public AwsIsolatedTest {
 protected:
  void SetUp() override {
    AwsIsolatedTest::SetUp();
    BALLAST_REQUIRE_S3(server());
    setenv("AWS_ACCESS_KEY_ID", S3Server::kKeys.access_key.c_str(), 1);
    setenv("AWS_SECRET_ACCESS_KEY", S3Server::kKeys.secret_key.c_str(), 1);
    setenv("AWS_REGION", S3Server::kRegion, 1);
    setenv("AWS_ENDPOINT_URL", server().endpoint().c_str(), 1);
  }

  std::string hash_of(const WeightSource& source, const std::string& name) {
    auto loader = make_weight_loader(remote_config());
    return sha256_hex(*loader->load_tensor(TensorSpec{.name = name, .source = source}));
  }
};

// One test for the whole corpus: every test process starts its own server, and the corpus is
// uploaded once.
TEST_F(S3SourceTest, GoldenFilesHashAsTheManifestSays) {
  BALLAST_REQUIRE_GOLDEN();
  server().upload("golden", *golden_dir(), "");
  auto loader = make_weight_loader(remote_config());
  for (const json& entry : golden_manifest()["files"]) {
    const std::string path = entry["path"], format = entry["format"];
    SCOPED_TRACE(path);
    if (!find_format_parser(parse_format(format))) continue;
    WeightSource source = WeightSource::s3("golden", path);
    apply_golden_raw_layout(entry, source);
    expect_golden_tensors(*loader, source, entry);
  }
}

TEST_F(S3SourceTest, MetadataEqualsTheLocalFilesAndSlicesFetchOnlyTheirRows) {
  const std::string file = safetensors_file(
      {{"w", "U8", {1024, 4096}, pattern(4 << 20, 7)}, {"b", "F32", {2}, f32_bytes({1, 2})}});
  server().put("models", "dir/sliced model.safetensors", file);
  TempDir local;
  write_file(local / "m.safetensors", file);
  auto loader = make_weight_loader(remote_config());
  const auto source = WeightSource::s3("models", "dir/sliced model.safetensors");
  EXPECT_TRUE(loader->is_available(source));
  server().clear_log();
  WeightMetadata meta = loader->get_metadata(source);
  WeightMetadata want =
      make_weight_loader()->get_metadata(WeightSource::file(local / "m.safetensors"));
  EXPECT_EQ(meta.tensors.size(), want.tensors.size());
  for (const auto& [name, info] : want.tensors) {
    EXPECT_EQ(meta.tensors.at(name).shape, info.shape) << name;
    EXPECT_EQ(meta.tensors.at(name).dtype, info.dtype) << name;
  }
  EXPECT_LE(server().get_bytes(), kProbeBytes + 1024);  // the header, not the tensors
  server().clear_log();
  auto rows = loader->load_tensor(
      TensorSpec{.name = "w",
                 .source = source,
                 .transformations = {Slice{.dim = 0, .start = 256, .end = 512}}});
  EXPECT_EQ(rows->shape(), (Shape{256, 4096}));
  EXPECT_EQ(server().get_bytes(), uint64_t{256 * 4096});
  for (const auto& r : server().requests()) {
    EXPECT_EQ(r["status"], 206) << r.dump();
    EXPECT_EQ(r["path"], "/models/dir/sliced%20model.safetensors");
  }
}

TEST_F(S3SourceTest, WithCachingObjectsAreDownloadedOnceIntoTheObjectCache) {
  const std::string file = safetensors_file({{"w", "U8", {1 << 20}, pattern(1 << 20, 9)}});
  server().put("models", "cached.safetensors", file);
  TempDir cache;
  WeightLoaderConfig config = remote_config();
  config.enable_caching = true;
  config.cache_dir = cache.path();
  const auto source = WeightSource::s3("models", "cached.safetensors");
  server().clear_log();
  const std::string first = sha256_hex(
      *make_weight_loader(config)->load_tensor(TensorSpec{.name = "w", .source = source}));
  EXPECT_EQ(server().get_bytes(), file.size());  // the whole object, once
  server().clear_log();
  const std::string again = sha256_hex(
      *make_weight_loader(config)->load_tensor(TensorSpec{.name = "w", .source = source}));
  EXPECT_EQ(again, first);
  for (const auto& r : server().requests()) EXPECT_EQ(r["method"], "HEAD") << r.dump();
  size_t blobs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cache / "objects"))
    blobs += entry.path().extension() == ".blob";
  EXPECT_EQ(blobs, 1u);
}

TEST_F(S3SourceTest, CliFetchDownloadsIntoTheObjectCacheOnce) {
  const std::string file = safetensors_file({{"w", "U8", {1 << 20}, pattern(1 << 20, 11)}});
  server().put("models", "fetched.safetensors", file);
  TempDir cache;
  const std::string fetch = cli_path() + " fetch -q s3://models/fetched.safetensors --cache-dir " +
                            shell_quote(cache.path().string());
  server().clear_log();
  auto first = run_command(fetch);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("1 tensor,"), std::string::npos) << first.out;
  EXPECT_EQ(server().get_bytes(), file.size());
  std::vector<std::filesystem::path> blobs;
  for (const auto& entry : std::filesystem::directory_iterator(cache / "objects"))
    if (entry.path().extension() == ".blob") blobs.push_back(entry.path());
  ASSERT_EQ(blobs.size(), 1u);
  EXPECT_EQ(read_file(blobs[0]), file);
  server().clear_log();
  auto again = run_command(fetch);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  for (const auto& r : server().requests()) EXPECT_EQ(r["method"], "HEAD") << r.dump();
}

TEST_F(S3SourceTest, ShardIndexResolvesShardsBesideIt) {
  server().put("models", "sharded/s1.safetensors",
               safetensors_file({{"x", "F32", {2}, f32_bytes({1, 2})}}));
  server().put("models", "sharded/s2.safetensors",
               safetensors_file({{"y", "F32", {2}, f32_bytes({3, 4})}}));
  server().put("models", "sharded/model.safetensors.index.json",
               R"({"metadata": {"total_size": 16}, "weight_map": {"x": "s1.safetensors",
                   "y": "./s2.safetensors"}})");
  server().clear_log();
  auto loader = make_weight_loader(remote_config());
  auto source = WeightSource::s3("models", "sharded/model.safetensors.index.json");
  auto y = loader->load_tensor(TensorSpec{.name = "y", .source = source});
  EXPECT_EQ(y->as<float>()[1], 4.0f);
  std::set<std::string> paths;
  for (const auto& r : server().requests()) paths.insert(r["path"].get<std::string>());
  EXPECT_EQ(paths, (std::set<std::string>{"/models/sharded/model.safetensors.index.json",
                                          "/models/sharded/s2.safetensors"}));
  EXPECT_EQ(loader->get_metadata(source).tensors.size(), 2u);
}

TEST_F(S3SourceTest, WithCachingTheShardIndexIsCachedToo) {
  server().put("models", "cached-sharded/s1.safetensors",
               safetensors_file({{"x", "F32", {2}, f32_bytes({1, 2})}}));
  server().put("models", "cached-sharded/model.safetensors.index.json",
               R"({"weight_map": {"x": "s1.safetensors"}})");
  TempDir cache;
  WeightLoaderConfig config = remote_config();
  config.enable_caching = true;
  config.cache_dir = cache.path();
  const auto source = WeightSource::s3("models", "cached-sharded/model.safetensors.index.json");
  auto x = make_weight_loader(config)->load_tensor(TensorSpec{.name = "x", .source = source});
  EXPECT_EQ(x->as<float>()[1], 2.0f);
  size_t blobs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cache / "objects"))
    blobs += entry.path().extension() == ".blob";
  EXPECT_EQ(blobs, 2u) << "the index and its shard";
  // A second loader sends only HEADs: the index body comes from the cache as well.
  server().clear_log();
  x = make_weight_loader(config)->load_tensor(TensorSpec{.name = "x", .source = source});
  EXPECT_EQ(x->as<float>()[0], 1.0f);
  for (const auto& r : server().requests()) EXPECT_EQ(r["method"], "HEAD") << r.dump();
}

TEST_F(S3SourceTest, AWrongSecretIsAnAuthErrorWithoutTheSecret) {
  server().put("models", "auth.safetensors", safetensors_file({{"x", "U8", {4}, "abcd"}}));
  const std::string wrong = "not-the-right-secret-1234";
  setenv("AWS_SECRET_ACCESS_KEY", wrong.c_str(), 1);
  auto loader = make_weight_loader(remote_config());
  auto source = WeightSource::s3("models", "auth.safetensors");
  Error e = error_of([&] { loader->get_metadata(source); });
  EXPECT_EQ(e.code(), ErrorCode::auth) << e.what();
  EXPECT_NE(std::string(e.what()).find("SignatureDoesNotMatch"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("s3://models/auth.safetensors"), std::string::npos)
      << e.what();
  EXPECT_EQ(std::string(e.what()).find(wrong), std::string::npos) << e.what();
  // A refusal names where the credentials came from.
  EXPECT_NE(std::string(e.what()).find("signed with credentials from the environment"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(error_of([&] { loader->is_available(source); }).code(), ErrorCode::auth);
  setenv("AWS_ACCESS_KEY_ID", "AKIDNOBODY", 1);
  // A new loader: a loader resolves the settings once per checkpoint it opens.
  e = error_of([&] { make_weight_loader(remote_config())->get_metadata(source); });
  EXPECT_EQ(e.code(), ErrorCode::auth) << e.what();
  EXPECT_NE(std::string(e.what()).find("InvalidAccessKeyId"), std::string::npos) << e.what();
}

TEST_F(S3SourceTest, AMissingKeyIsNotFoundWithNoSuchKey) {
  auto loader = make_weight_loader(remote_config());
  server().put("models", "present.safetensors", safetensors_file({{"x", "U8", {4}, "abcd"}}));
  EXPECT_TRUE(loader->is_available(WeightSource::s3("models", "present.safetensors")));
  auto missing = WeightSource::s3("models", "absent.safetensors");
  EXPECT_FALSE(loader->is_available(missing));
  Error e = error_of([&] { loader->get_metadata(missing); });
  EXPECT_EQ(e.code(), ErrorCode::not_found) << e.what();
  EXPECT_NE(std::string(e.what()).find("NoSuchKey"), std::string::npos) << e.what();
  e = error_of([&] { loader->get_metadata(WeightSource::s3("no-such-bucket", "x")); });
  EXPECT_EQ(e.code(), ErrorCode::not_found) << e.what();
  EXPECT_NE(std::string(e.what()).find("NoSuchBucket"), std::string::npos) << e.what();
}

TEST_F(S3SourceTest, SessionTokensAreSentAndSigned) {
  server().put("models", "temp.safetensors", safetensors_file({{"x", "U8", {4}, "wxyz"}}));
  const auto source = WeightSource::s3("models", "temp.safetensors");
  const std::string want = hash_of(source, "x");
  setenv("AWS_ACCESS_KEY_ID", S3Server::kTemporaryKeys.access_key.c_str(), 1);
  setenv("AWS_SECRET_ACCESS_KEY", S3Server::kTemporaryKeys.secret_key.c_str(), 1);
  Error e = error_of([&] { hash_of(source, "x"); });
  EXPECT_EQ(e.code(), ErrorCode::auth) << e.what();
  EXPECT_NE(std::string(e.what()).find("InvalidToken"), std::string::npos) << e.what();
  setenv("AWS_SESSION_TOKEN", S3Server::kTemporaryKeys.session_token.c_str(), 1);
  EXPECT_EQ(hash_of(source, "x"), want);
  setenv("AWS_SESSION_TOKEN", "a-stale-token", 1);
  e = error_of([&] { hash_of(source, "x"); });
  EXPECT_EQ(e.code(), ErrorCode::auth) << e.what();
  EXPECT_EQ(std::string(e.what()).find("a-stale-token"), std::string::npos) << e.what();
}

TEST_F(S3SourceTest, ProfilesInHomeAndNamedFilesAreRead) {
  server().put("models", "profile.safetensors", safetensors_file({{"x", "U8", {4}, "prof"}}));
  const auto source = WeightSource::s3("models", "profile.safetensors");
  const std::string want = hash_of(source, "x");
  clear_aws_environment();
  write_file(home_ / ".aws/credentials",
             "[default]\naws_access_key_id = " + S3Server::kKeys.access_key +
                 "\naws_secret_access_key = " + S3Server::kKeys.secret_key + "\n");
  write_file(home_ / ".aws/config", std::string("[default]\nregion = ") + S3Server::kRegion +
                                        "\ns3 =\n  endpoint_url = " + server().endpoint() + "\n");
  EXPECT_EQ(hash_of(source, "x"), want);
  write_file(home_ / "team/credentials",
             "[team]\naws_access_key_id = " + S3Server::kTemporaryKeys.access_key +
                 "\naws_secret_access_key = " + S3Server::kTemporaryKeys.secret_key +
                 "\naws_session_token = " + S3Server::kTemporaryKeys.session_token + "\n");
  write_file(home_ / "team/config", std::string("[profile team]\nregion = ") + S3Server::kRegion +
                                        "\nendpoint_url = " + server().endpoint() + "\n");
  setenv("AWS_SHARED_CREDENTIALS_FILE", (home_ / "team/credentials").c_str(), 1);
  setenv("AWS_CONFIG_FILE", (home_ / "team/config").c_str(), 1);
  setenv("AWS_PROFILE", "team", 1);
  EXPECT_EQ(hash_of(source, "x"), want);
  setenv("AWS_REGION", "eu-west-1", 1);  // the environment wins; the server refuses the region
  Error e = error_of([&] { hash_of(source, "x"); });
  EXPECT_NE(std::string(e.what()).find("AuthorizationHeaderMalformed"), std::string::npos)
      << e.what();
}

TEST_F(S3SourceTest, WithoutCredentialsOnlyAskedForUnsignedRequestsAreSent) {
  server().put("public", "open.safetensors", safetensors_file({{"x", "U8", {4}, "open"}}));
  server().put("models", "closed.safetensors", safetensors_file({{"x", "U8", {4}, "shut"}}));
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  const auto open_source = WeightSource::s3("public", "open.safetensors");
  server().clear_log();
  Error e = error_of([&] { make_weight_loader(remote_config())->get_metadata(open_source); });
  EXPECT_EQ(e.code(), ErrorCode::auth) << e.what();
  for (const char* named :
       {"no AWS credentials found", "AWS_ACCESS_KEY_ID", "credentials",
        "AWS_WEB_IDENTITY_TOKEN_FILE", "credential_process", "sso_session",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_EC2_METADATA_DISABLED",
        "AWS_NO_SIGN_REQUEST=true", "--no-sign-request", "s3://public/open.safetensors"})
    EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << named << ": " << e.what();
  EXPECT_TRUE(server().requests().empty()) << "nothing is sent without credentials";
  setenv("AWS_NO_SIGN_REQUEST", "true", 1);
  auto loader = make_weight_loader(remote_config());
  auto open = loader->load_tensor(TensorSpec{.name = "x", .source = open_source});
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(open->bytes().data()), 4), "open");
  e = error_of([&] { loader->get_metadata(WeightSource::s3("models", "closed.safetensors")); });
  EXPECT_EQ(e.code(), ErrorCode::auth) << e.what();
  EXPECT_NE(std::string(e.what()).find("AccessDenied"), std::string::npos) << e.what();
  // The CLI's --no-sign-request is the same request.
  unsetenv("AWS_NO_SIGN_REQUEST");
  auto refused = run_command(cli_path() + " inspect s3://public/open.safetensors");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("no AWS credentials found"), std::string::npos) << refused.err;
  auto unsigned_cli =
      run_command(cli_path() + " inspect --json --no-sign-request s3://public/open.safetensors");
  ASSERT_EQ(unsigned_cli.exit_code, 0) << unsigned_cli.err;
  EXPECT_EQ(json::parse(unsigned_cli.out)["tensors"].size(), 1u);
}

TEST_F(S3SourceTest, TheSourcesEndpointAndRegionWinOverTheEnvironment) {
  server().put("models", "own.safetensors", safetensors_file({{"x", "U8", {4}, "mine"}}));
  setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1", 1);
  setenv("AWS_REGION", "eu-west-1", 1);
  auto loader = make_weight_loader(remote_config());
  auto x = loader->load_tensor(TensorSpec{
      .name = "x",
      .source =
          WeightSource::s3("models", "own.safetensors", S3Server::kRegion, server().endpoint())});
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(x->bytes().data()), 4), "mine");
}

TEST_F(S3SourceTest, VirtualHostedRequestsAreSignedForTheBucketsHost) {
  server().put("models", "vhost/model.safetensors", safetensors_file({{"x", "U8", {4}, "host"}}));
  // libcurl resolves *.localhost to the loopback address itself: no DNS needed.
  const std::string host = "localhost:" + std::to_string(server().port());
  const std::string endpoint = "http://" + host;
  setenv("AWS_ENDPOINT_URL", endpoint.c_str(), 1);
  setenv("BALLAST_S3_ADDRESSING_STYLE", "virtual", 1);
  server().clear_log();
  auto loader = make_weight_loader(remote_config());
  auto x = loader->load_tensor(
      TensorSpec{.name = "x", .source = WeightSource::s3("models", "vhost/model.safetensors")});
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(x->bytes().data()), 4), "host");
  const json requests = server().requests();
  ASSERT_FALSE(requests.empty());
  for (const auto& r : requests) {
    EXPECT_EQ(r["host"], "models." + host) << r.dump();
    EXPECT_EQ(r["path"], "/models/vhost/model.safetensors") << r.dump();
  }
}

TEST_F(S3SourceTest, CapabilitiesListS3) {
  auto caps = make_weight_loader()->capabilities();
  EXPECT_NE(std::find(caps.sources.begin(), caps.sources.end(), "s3"), caps.sources.end());
}

TEST_F(S3SourceTest, CliReadsS3Sources) {
  server().put("models", "cli.safetensors",
               safetensors_file(
                   {{"a", "U8", {1000}, pattern(1000, 5)}, {"b", "F32", {2}, f32_bytes({5, 6})}}));
  TempDir local;
  write_file(local / "cli.safetensors", safetensors_file({{"a", "U8", {1000}, pattern(1000, 5)},
                                                          {"b", "F32", {2}, f32_bytes({5, 6})}}));
  unsetenv("AWS_ENDPOINT_URL");
  unsetenv("AWS_REGION");
  auto remote = run_command(cli_path() + " hash --json s3://models/cli.safetensors --s3-endpoint " +
                            shell_quote(server().endpoint()) + " --s3-region " + S3Server::kRegion);
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  auto from_disk =
      run_command(cli_path() + " hash --json " + shell_quote((local / "cli.safetensors").string()));
  ASSERT_EQ(from_disk.exit_code, 0) << from_disk.err;
  EXPECT_EQ(json::parse(remote.out), json::parse(from_disk.out));
  setenv("AWS_ENDPOINT_URL", server().endpoint().c_str(), 1);
  setenv("AWS_REGION", S3Server::kRegion, 1);
  auto inspect = run_command(cli_path() + " inspect --json s3://models/cli.safetensors");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_EQ(json::parse(inspect.out)["tensors"].size(), 2u);
  auto missing = run_command(cli_path() + " hash s3://models/none.safetensors");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("NoSuchKey"), std::string::npos) << missing.err;
  auto misplaced = run_command(cli_path() + " hash --s3-region eu-west-1 " +
                               shell_quote((local / "cli.safetensors").string()));
  EXPECT_NE(misplaced.exit_code, 0);
  EXPECT_NE(misplaced.err.find("--s3-region"), std::string::npos) << misplaced.err;
}

}  // namespace
}  // namespace ballast::test
