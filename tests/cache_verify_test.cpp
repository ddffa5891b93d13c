// A corrupted cached blob is not used silently. Object-cache records hold the sha256 of the
// download: a blob written in place since (its modification time moved) is hashed again on use
// and downloaded anew when it no longer matches; `ballast cache verify` hashes every blob of
// both caches (object-cache blobs against their records, Hub blobs against their names: sha256
// for LFS files, the git object id for the others) and --delete removes corrupt ones.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>

#include "ballast/ballast.hpp"
#include "remote/sha256.hpp"
#include "support/nginx_server.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

namespace fs = std::filesystem;
using State = CachedBlobCheck::State;

std::string file_bytes() {
  std::string a(1 << 20, '\0');
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<char>(i * 31 + 7);
  return safetensors_file({{"a", "U8", {1 << 20}, a}});
}

std::string tensor_bytes(const Tensor& t) {
  return std::string(reinterpret_cast<const char*>(t.data()), t.nbytes());
}

// Flips one byte of a blob in place; `keep_mtime` puts its modification time back after.
void corrupt(const fs::path& blob, bool keep_mtime) {
  const auto mtime = fs::last_write_time(blob);
  std::string bytes = read_file(blob);
  bytes[bytes.size() - 1] ^= 0x5a;
  write_file(blob, bytes);
  if (keep_mtime) fs::last_write_time(blob, mtime);
}

template <typename Digest>
std::string digest_of(const std::string& bytes) {
  Digest d;
  d.update(std::as_bytes(std::span(bytes)));
  return d.hex();
}

class CacheVerify : public testing::Test {
 protected:
  void SetUp() override {
    BALLAST_REQUIRE_NGINX(server_);
    write_file(server_.files() / "m.safetensors", file_bytes());
  }
  WeightLoaderConfig config() const {
    WeightLoaderConfig c;
    c.cache_dir = cache_.path();
    c.download_retries = 1;
    c.download_timeout_seconds = 10;
    return c;
  }
  std::string load_a() {
    return tensor_bytes(*make_weight_loader(config())->load_tensor(
        {.name = "a", .source = WeightSource::url(server_.url("files/m.safetensors"))}));
  }
  fs::path the_blob() const {
    for (const auto& e : fs::directory_iterator(cache_ / "objects"))
      if (e.path().extension() == ".blob") return e.path();
    return {};
  }
  std::vector<CachedBlobCheck> verify(bool remove = false) const {
    return verify_caches(
        {.cache_dir = cache_.path(), .hub_cache = hub_.path(), .remove_corrupt = remove});
  }

  NginxServer server_{std::nullopt};
  TempDir cache_, hub_;
};

TEST_F(CacheVerify, ADownloadedObjectVerifies) {
  const std::string want = load_a();
  const auto checks = verify();
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].state, State::ok);
  EXPECT_EQ(checks[0].expected, "sha256:" + digest_of<Sha256>(file_bytes()));
  EXPECT_EQ(load_a(), want);
}

TEST_F(CacheVerify, ABlobWrittenSinceItsDownloadIsDownloadedAgain) {
  const std::string want = load_a();
  corrupt(the_blob(), /*keep_mtime=*/false);
  server_.clear_log();
  EXPECT_EQ(load_a(), want);
  EXPECT_EQ(server_.settled_body_bytes(), file_bytes().size());
  EXPECT_EQ(verify()[0].state, State::ok);
}

TEST_F(CacheVerify, VerifyFindsBytesThatRottedWithoutAWriteAndDeleteRemovesThem) {
  load_a();
  const fs::path blob = the_blob();
  corrupt(blob, /*keep_mtime=*/true);
  auto checks = verify();
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].state, State::corrupt);
  EXPECT_NE(checks[0].actual, checks[0].expected);
  checks = verify(/*remove=*/true);
  EXPECT_TRUE(checks[0].removed);
  EXPECT_FALSE(fs::exists(blob));
  EXPECT_EQ(load_a(),
            tensor_bytes(*make_weight_loader()->load_tensor(
                {.name = "a", .source = WeightSource::url(server_.url("files/m.safetensors"))})));
}

TEST_F(CacheVerify, HubBlobsAreCheckedAgainstTheirNames) {
  const fs::path blobs = hub_ / "models--org--name" / "blobs";
  const std::string weights = file_bytes(), config_json = R"({"hidden_size": 8})";
  const std::string git_id = digest_of<Sha1>("blob " + std::to_string(config_json.size()) +
                                             std::string(1, '\0') + config_json);
  write_file(blobs / digest_of<Sha256>(weights), weights);
  write_file(blobs / git_id, config_json);
  for (const auto& c : verify()) EXPECT_EQ(c.state, State::ok) << c.blob;
  corrupt(blobs / git_id, /*keep_mtime=*/true);
  size_t corrupt_blobs = 0;
  for (const auto& c : verify()) corrupt_blobs += c.state == State::corrupt;
  EXPECT_EQ(corrupt_blobs, 1u);

  auto r = run_command(cli_path() + " cache verify --json --cache-dir " +
                       shell_quote(cache_.path().string()) + " --hub-cache " +
                       shell_quote(hub_.path().string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("1 of 2 cached blobs are corrupt"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).size(), 2u);
  r = run_command(cli_path() + " cache verify --delete --cache-dir " +
                  shell_quote(cache_.path().string()) + " --hub-cache " +
                  shell_quote(hub_.path().string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(fs::exists(blobs / git_id));
  r = run_command(cli_path() + " cache verify --cache-dir " + shell_quote(cache_.path().string()) +
                  " --hub-cache " + shell_quote(hub_.path().string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// With integrity checks on, a load checks each cached Hub blob it uses against its name (once
// per process while the file stays the same): a flipped byte whose modification time was put
// back is an integrity error. With them off, nothing is checked on use. Before, the flipped
// byte was loaded silently either way.
TEST_F(CacheVerify, ALoadChecksTheCachedHubBlobsItUsesAgainstTheirNames) {
  const std::string weights = file_bytes(), commit(40, 'c');
  const fs::path repo = hub_ / "models--org--name";
  const fs::path blob = repo / "blobs" / digest_of<Sha256>(weights);
  write_file(blob, weights);
  fs::create_directories(repo / "snapshots" / commit);
  fs::create_symlink(fs::path("../../blobs") / blob.filename(),
                     repo / "snapshots" / commit / "model.safetensors");
  setenv("HF_HUB_OFFLINE", "1", 1);
  const auto source =
      WeightSource::hugging_face("org/name", "model.safetensors", commit, hub_.path());
  auto load = [&](bool integrity) {
    WeightLoaderConfig c = config();
    c.enable_integrity_checks = integrity;
    return tensor_bytes(*make_weight_loader(c)->load_tensor({.name = "a", .source = source}));
  };
  const std::string want = load(true);
  corrupt(blob, /*keep_mtime=*/true);
  try {
    load(true);
    ADD_FAILURE() << "loaded a corrupt blob";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::integrity) << e.what();
    EXPECT_NE(std::string(e.what()).find(blob.filename().string()), std::string::npos) << e.what();
  }
  EXPECT_NE(load(false), want);
  unsetenv("HF_HUB_OFFLINE");
}

}  // namespace
}  // namespace ballast::test
