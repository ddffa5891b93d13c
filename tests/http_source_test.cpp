// Remote sources against a real HTTP server (Debian's nginx on 127.0.0.1): every golden file
// hashes the same through HTTP as from disk, lazy loads fetch only the header and the
// requested tensor's bytes (counted in nginx's access log), sharded indexes fetch only the
// shards they need, large reads go out as concurrent ranges, and the CLI reads URLs.
#include <gtest/gtest.h>

#include <set>

#include "ballast/ballast.hpp"
#include "support/golden_cases.hpp"
#include "support/nginx_server.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;

WeightLoaderConfig remote_config() {
  WeightLoaderConfig config;
  config.enable_caching = false;
  config.download_timeout_seconds = 10;
  config.download_retries = 1;
  return config;
}

NginxServer& server() { return process_wide<NginxServer>(); }

class GoldenOverHttp : public testing::TestWithParam<std::string> {};

TEST_P(GoldenOverHttp, HashesEqualTheManifest) {
  BALLAST_REQUIRE_GOLDEN();
  BALLAST_REQUIRE_NGINX(server());
  const json& entry = golden_entry(GetParam());
  const std::string format = entry["format"];
  if (!find_format_parser(parse_format(format)))
    GTEST_SKIP() << "format " << format << " is not built into this library";
  WeightSource source = WeightSource::url(server().url("golden/" + GetParam()));
  apply_golden_raw_layout(entry, source);
  auto loader = make_weight_loader(remote_config());
  expect_golden_tensors(*loader, source, entry);
}

INSTANTIATE_TEST_SUITE_P(Manifest, GoldenOverHttp, testing::ValuesIn(golden_case_paths()),
                         golden_case_name);

// Two 4 MiB tensors; the second one's bytes are distinct from the first's.
std::string two_tensor_file() {
  std::string a(4 << 20, '\0'), b(4 << 20, '\0');
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<char>(i * 7);
    b[i] = static_cast<char>(i * 13 + 1);
  }
  return safetensors_file({{"a", "U8", {4 << 20}, a}, {"b", "U8", {4 << 20}, b}});
}

TEST(HttpSource, LazyLoadFetchesOnlyTheHeaderAndTheTensor) {
  BALLAST_REQUIRE_NGINX(server());
  const std::string file = two_tensor_file();
  write_file(server().files() / "two.safetensors", file);
  const uint64_t header = 8 + (static_cast<uint64_t>(static_cast<unsigned char>(file[0])) |
                               static_cast<uint64_t>(static_cast<unsigned char>(file[1])) << 8);
  server().clear_log();
  auto loader = make_weight_loader(remote_config());
  auto source = WeightSource::url(server().url("files/two.safetensors"));
  auto meta = loader->get_metadata(source);
  EXPECT_EQ(meta.tensors.size(), 2u);
  const uint64_t after_metadata = server().settled_body_bytes();
  EXPECT_LE(after_metadata, header + kProbeBytes);
  auto b = loader->load_tensor(TensorSpec{.name = "b", .source = source});
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b->bytes().data()), b->nbytes()),
            file.substr(header + (4 << 20)));
  EXPECT_EQ(server().settled_body_bytes() - after_metadata, uint64_t{4 << 20});
  for (const auto& r : server().requests())
    if (r.method == "GET") {
      EXPECT_EQ(r.status, 206) << r.range;
    }
}

TEST(HttpSource, LargeReadsGoOutAsConcurrentRanges) {
  BALLAST_REQUIRE_NGINX(server());
  const std::string file = two_tensor_file();
  write_file(server().files() / "chunks.safetensors", file);
  auto config = remote_config();
  config.download_chunk_bytes = 256 << 10;
  config.max_concurrent_downloads = 4;
  auto loader = make_weight_loader(config);
  server().clear_log();
  auto source = WeightSource::url(server().url("files/chunks.safetensors"));
  auto a = loader->load_tensor(TensorSpec{.name = "a", .source = source});
  auto local = make_weight_loader()->load_tensor(TensorSpec{
      .name = "a", .source = WeightSource::file(server().files() / "chunks.safetensors")});
  EXPECT_EQ(sha256_hex(*a), sha256_hex(*local));
  size_t chunk_requests = 0;
  for (const auto& r : server().requests())
    if (r.method == "GET" && r.body_bytes == (256 << 10)) ++chunk_requests;
  EXPECT_EQ(chunk_requests, 16u);
}

TEST(HttpSource, ShardIndexFetchesOnlyTheShardsItNeeds) {
  BALLAST_REQUIRE_NGINX(server());
  write_file(server().files() / "sharded/s1.safetensors",
             safetensors_file({{"x", "F32", {2}, f32_bytes({1, 2})}}));
  write_file(server().files() / "sharded/s2.safetensors",
             safetensors_file({{"y", "F32", {2}, f32_bytes({3, 4})}}));
  write_file(server().files() / "sharded/model.safetensors.index.json",
             R"({"metadata": {"total_size": 16}, "weight_map": {"x": "s1.safetensors",
                 "y": "./s2.safetensors"}})");
  server().clear_log();
  auto loader = make_weight_loader(remote_config());
  auto source = WeightSource::url(server().url("files/sharded/model.safetensors.index.json"));
  auto y = loader->load_tensor(TensorSpec{.name = "y", .source = source});
  EXPECT_EQ(y->as<float>()[1], 4.0f);
  std::set<std::string> uris;
  for (const auto& r : server().requests()) uris.insert(r.uri);
  EXPECT_EQ(uris, (std::set<std::string>{"/files/sharded/model.safetensors.index.json",
                                         "/files/sharded/s2.safetensors"}));
  EXPECT_EQ(loader->get_metadata(source).tensors.size(), 2u);
}

TEST(HttpSource, ShardNamesMayNotLeaveTheIndexFolder) {
  BALLAST_REQUIRE_NGINX(server());
  write_file(server().files() / "escape/model.safetensors.index.json",
             R"({"weight_map": {"x": "../two.safetensors"}})");
  auto loader = make_weight_loader(remote_config());
  try {
    loader->get_metadata(
        WeightSource::url(server().url("files/escape/model.safetensors.index.json")));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_format) << e.what();
  }
}

TEST(HttpSource, MissingObjectsAreNotFoundAndUnavailable) {
  BALLAST_REQUIRE_NGINX(server());
  auto loader = make_weight_loader(remote_config());
  auto missing = WeightSource::url(server().url("files/nothing.safetensors"));
  EXPECT_FALSE(loader->is_available(missing));
  write_file(server().files() / "here.safetensors", two_tensor_file());
  EXPECT_TRUE(loader->is_available(WeightSource::url(server().url("files/here.safetensors"))));
  try {
    loader->get_metadata(missing);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::not_found) << e.what();
  }
}

TEST(HttpSource, UnreachableServerIsANetworkError) {
  auto config = remote_config();
  config.download_retries = 0;
  auto loader = make_weight_loader(config);
  try {
    loader->get_metadata(WeightSource::url("http://127.0.0.1:1/x.safetensors"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::network) << e.what();
  }
}

TEST(HttpSource, CliHashesUrlsLikeFiles) {
  BALLAST_REQUIRE_NGINX(server());
  write_file(server().files() / "cli.safetensors", two_tensor_file());
  auto remote = run_command(cli_path() + " hash --json " +
                            shell_quote(server().url("files/cli.safetensors")));
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  auto local = run_command(cli_path() + " hash --json " +
                           shell_quote((server().files() / "cli.safetensors").string()));
  ASSERT_EQ(local.exit_code, 0) << local.err;
  EXPECT_EQ(json::parse(remote.out), json::parse(local.out));
  auto inspect = run_command(cli_path() + " inspect --json " +
                             shell_quote(server().url("files/cli.safetensors")));
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_EQ(json::parse(inspect.out)["tensors"].size(), 2u);
}

}  // namespace
}  // namespace ballast::test
