// A Hugging Face cache snapshot loads as a plain folder: its files are symlinks into the repo's
// blobs folder (what snapshot_download returns to vLLM users), and a shard index there resolves
// through them. A symlink from a snapshot anywhere else is still refused as an escape.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

namespace fs = std::filesystem;

// <root>/models--org--name/{blobs,snapshots/<commit>,refs}, laid out as huggingface_hub does.
class HubSnapshotFolder : public testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(repo() / "blobs");
    fs::create_directories(snapshot());
    add("model-00001-of-00002.safetensors", "blob1",
        safetensors_file({{"a", "F32", {2}, f32_bytes({1, 2})}}));
    add("model-00002-of-00002.safetensors", "blob2",
        safetensors_file({{"b", "F32", {1}, f32_bytes({3})}}));
    add("model.safetensors.index.json", "blob3",
        R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
                           "b": "model-00002-of-00002.safetensors"}})");
  }

  fs::path repo() const { return root_ / "models--org--name"; }
  fs::path snapshot() const { return repo() / "snapshots" / std::string(40, 'c'); }

  // Writes a blob and links the snapshot's `name` to it, relative, as huggingface_hub does.
  void add(const std::string& name, const std::string& blob, const std::string& bytes) {
    write_file(repo() / "blobs" / blob, bytes);
    fs::create_symlink(fs::path("../../blobs") / blob, snapshot() / name);
  }

  ErrorCode error_of_loading(const std::string& name) {
    return error_code_of(
        [&] {
          make_weight_loader()->load_tensor(
              {.name = name, .source = WeightSource::file(snapshot())});
        },
        "loaded " + name);
  }

  TempDir root_;
};

TEST_F(HubSnapshotFolder, AShardedSnapshotLoadsAsAFolder) {
  auto loader = make_weight_loader();
  const auto meta = loader->get_metadata(WeightSource::file(snapshot()));
  EXPECT_EQ(meta.tensors.size(), 2u);
  auto b = loader->load_tensor({.name = "b", .source = WeightSource::file(snapshot())});
  EXPECT_EQ(b->as<float>()[0], 3.0f);
}

TEST_F(HubSnapshotFolder, ASymlinkOutOfTheReposBlobsIsRefused) {
  write_file(repo() / "elsewhere.safetensors",
             safetensors_file({{"a", "F32", {2}, f32_bytes({1, 2})}}));
  fs::remove(snapshot() / "model-00001-of-00002.safetensors");
  fs::create_symlink("../../elsewhere.safetensors",
                     snapshot() / "model-00001-of-00002.safetensors");
  EXPECT_EQ(error_of_loading("a"), ErrorCode::invalid_format);
}

TEST_F(HubSnapshotFolder, ASymlinkIntoAnotherReposBlobsIsRefused) {
  const fs::path other = root_ / "models--other--repo" / "blobs";
  write_file(other / "x", safetensors_file({{"a", "F32", {2}, f32_bytes({1, 2})}}));
  fs::remove(snapshot() / "model-00001-of-00002.safetensors");
  fs::create_symlink("../../../models--other--repo/blobs/x",
                     snapshot() / "model-00001-of-00002.safetensors");
  EXPECT_EQ(error_of_loading("a"), ErrorCode::invalid_format);
}

// Offline, hf:// reads the same snapshot through the same rule: a file of the snapshot that
// resolves outside it and its repo's blobs is refused, whether named or reached through the
// shard index. Before, the Hub cache followed the symlink wherever it led.
TEST_F(HubSnapshotFolder, OfflineHfSourcesRefuseASymlinkOutOfTheReposBlobs) {
  TempDir outside;
  write_file(outside / "elsewhere.safetensors",
             safetensors_file({{"a", "F32", {2}, f32_bytes({1, 2})}}));
  fs::remove(snapshot() / "model-00001-of-00002.safetensors");
  fs::create_symlink(outside / "elsewhere.safetensors",
                     snapshot() / "model-00001-of-00002.safetensors");
  write_file(repo() / "refs" / "main", std::string(40, 'c'));
  setenv("HF_HUB_OFFLINE", "1", 1);
  auto load = [&](const std::string& file) {
    return error_code_of(
        [&] {
          make_weight_loader()->load_tensor(
              {.name = "a",
               .source = WeightSource::hugging_face("org/name", file, "main", root_.path())});
        },
        "loaded a from hf://org/name/" + file);
  };
  EXPECT_EQ(load("model-00001-of-00002.safetensors"), ErrorCode::invalid_format);
  EXPECT_EQ(load(""), ErrorCode::invalid_format);
  auto b = make_weight_loader()->load_tensor(
      {.name = "b", .source = WeightSource::hugging_face("org/name", "", "main", root_.path())});
  EXPECT_EQ(b->as<float>()[0], 3.0f);
  unsetenv("HF_HUB_OFFLINE");
}

}  // namespace
}  // namespace ballast::test
