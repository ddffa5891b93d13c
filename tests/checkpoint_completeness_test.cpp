// A checkpoint that is missing parts is an error, not a smaller model: a shard index whose
// weight map and shards disagree fails its whole listing (get_metadata, load_checkpoint) while
// tensors named one by one still load, and a folder holding a GGUF split set with shards
// missing fails (a shard file named on its own is that file, as the golden manifest says).
#include <gtest/gtest.h>

#include <filesystem>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

namespace fs = std::filesystem;

ErrorCode metadata_error(const WeightSource& source) {
  return error_code_of([&] { make_weight_loader()->get_metadata(source); },
                       "listed an incomplete checkpoint");
}

// Two shards: a.safetensors holds "a" (and "extra" when asked), b.safetensors holds "b".
fs::path sharded(const TempDir& dir, const std::string& weight_map, bool extra = false) {
  std::vector<StTensor> a = {{"a", "F32", {1}, f32_bytes({1})}};
  if (extra) a.push_back({"extra", "F32", {1}, f32_bytes({9})});
  write_file(dir / "a.safetensors", safetensors_file(a));
  write_file(dir / "b.safetensors", safetensors_file({{"b", "F32", {1}, f32_bytes({2})}}));
  write_file(dir / "model.safetensors.index.json", R"({"weight_map": )" + weight_map + "}");
  return dir / "model.safetensors.index.json";
}

float first_value(const WeightSource& source, const std::string& name) {
  return make_weight_loader()->load_tensor({.name = name, .source = source})->as<float>()[0];
}

TEST(CheckpointCompleteness, AMapNamingATensorItsShardLacksFailsTheListing) {
  TempDir dir;
  const auto index = sharded(dir, R"({"a": "a.safetensors", "b": "b.safetensors",
                                      "c": "b.safetensors"})");
  EXPECT_EQ(metadata_error(WeightSource::file(index)), ErrorCode::invalid_format);
  EXPECT_EQ(first_value(WeightSource::file(index), "a"), 1.0f);  // a subset still loads
}

TEST(CheckpointCompleteness, AShardHoldingATensorTheMapLeavesOutFailsTheListing) {
  TempDir dir;
  const auto index =
      sharded(dir, R"({"a": "a.safetensors", "b": "b.safetensors"})", /*extra=*/true);
  EXPECT_EQ(metadata_error(WeightSource::file(index)), ErrorCode::invalid_format);
  EXPECT_EQ(first_value(WeightSource::file(index), "b"), 2.0f);
}

TEST(CheckpointCompleteness, AMapPlacingATensorInTheWrongShardFailsTheListing) {
  TempDir dir;
  write_file(dir / "c.safetensors", safetensors_file({{"c", "F32", {1}, f32_bytes({3})}}));
  const auto index = sharded(dir, R"({"a": "a.safetensors", "b": "c.safetensors",
                                      "c": "b.safetensors"})");
  EXPECT_EQ(metadata_error(WeightSource::file(index)), ErrorCode::invalid_format);
}

TEST(CheckpointCompleteness, AMatchingMapListsEveryTensor) {
  TempDir dir;
  const auto index = sharded(dir, R"({"a": "a.safetensors", "b": "b.safetensors"})");
  EXPECT_EQ(make_weight_loader()->get_metadata(WeightSource::file(index)).tensors.size(), 2u);
}

class GgufSplitSet : public testing::Test {
 protected:
  void SetUp() override {
    BALLAST_REQUIRE_GOLDEN();
    for (int i = 1; i <= 3; ++i) {
      const std::string name = "split-0000" + std::to_string(i) + "-of-00003.gguf";
      fs::copy_file(*golden_dir() / "gguf" / name, dir_ / name);
    }
  }
  fs::path shard(int i) const {
    return dir_ / ("split-0000" + std::to_string(i) + "-of-00003.gguf");
  }
  TempDir dir_;
};

TEST_F(GgufSplitSet, AFolderHoldingTheWholeSetIsOneModel) {
  EXPECT_EQ(make_weight_loader()->get_metadata(WeightSource::file(dir_.path())).tensors.size(), 5u);
}

TEST_F(GgufSplitSet, AFolderWithShardsMissingIsNotFoundNamingThem) {
  fs::remove(shard(3));
  try {
    make_weight_loader()->get_metadata(WeightSource::file(dir_.path()));
    ADD_FAILURE() << "listed an incomplete split set";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::not_found);
    EXPECT_NE(std::string(e.what()).find("1 of its 3 shards are missing (split-00003-of-00003"),
              std::string::npos)
        << e.what();
  }
  fs::remove(shard(2));  // one shard alone in its folder is not the model either
  EXPECT_EQ(metadata_error(WeightSource::file(dir_.path())), ErrorCode::not_found);
}

}  // namespace
}  // namespace ballast::test
