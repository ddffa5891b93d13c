// The CLI's tensor-parallel pieces: `inspect --shard` prints the bytes and ranges each rank
// reads (tensors with too few dimensions read whole), and `--transform shard:...` is accepted
// by hash, load and convert with the library's result.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;

CommandResult ballast(const std::string& args) { return run_command(cli_path() + " " + args); }

class TensorParallelCli : public testing::Test {
 protected:
  void SetUp() override {
    std::vector<float> w(8 * 64), norm(64);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i);
    for (size_t i = 0; i < norm.size(); ++i) norm[i] = 1.0f;
    write_file(file_, safetensors_file({{"norm", "F32", {64}, f32_bytes(norm)},
                                        {"w", "F32", {8, 64}, f32_bytes(w)}}));
  }
  TempDir dir_;
  std::filesystem::path file_ = dir_ / "model.safetensors";
};

TEST_F(TensorParallelCli, InspectShowsEachRanksReads) {
  auto r = ballast("inspect " + shell_quote(file_.string()) + " --shard all/4:1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json plan = json::parse(r.out);
  ASSERT_EQ(plan["ranks"].size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    const json& p = plan["ranks"][rank];
    EXPECT_EQ(p["rank"], rank);
    // w: 8 rows of 16 columns (64 bytes) each, 192 bytes apart, coalesced into one range;
    // norm (1-D) is read whole.
    EXPECT_EQ(p["bytes_read"], 7 * 256 + 64 + 256) << p.dump();
    EXPECT_EQ(p["tensors"][0]["name"], "norm");
    EXPECT_FALSE(p["tensors"][0].contains("transform"));
    EXPECT_EQ(p["tensors"][1]["transform"], fmt::format("shard:{}/4:1", rank));
    EXPECT_EQ(p["tensors"][1]["ranges"], 1);
  }
  auto table = ballast("inspect " + shell_quote(file_.string()) + " --shard 1/2");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  // norm's second half (128 bytes) and w's rows 4..7 (1024 bytes).
  EXPECT_NE(table.out.find("(1152 bytes, 50.0%"), std::string::npos) << table.out;
  auto bad = ballast("inspect " + shell_quote(file_.string()) + " --shard 2/2");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("RANK must be in 0..WORLD-1"), std::string::npos) << bad.err;
}

TEST_F(TensorParallelCli, HashLoadAndConvertTakeTheShardStep) {
  const std::string steps = "shard:1/3:0:4+4";
  auto expected = make_weight_loader()->load_tensor(
      TensorSpec{.name = "w",
                 .source = WeightSource::file(file_),
                 .transformations = parse_transformations(steps)});
  auto hash =
      ballast("hash --json " + shell_quote(file_.string()) + " --tensor w --transform " + steps);
  ASSERT_EQ(hash.exit_code, 0) << hash.err;
  const json h = json::parse(hash.out)["tensors"]["w"];
  EXPECT_EQ(h["sha256"], sha256_hex(*expected));
  EXPECT_EQ(h["shape"], (json{4, 64}));  // rows 2, 3 of each part of 4
  auto load =
      ballast("load --json " + shell_quote(file_.string()) + " --tensor w --transform " + steps);
  ASSERT_EQ(load.exit_code, 0) << load.err;
  EXPECT_EQ(json::parse(load.out)["bytes"], 4 * 64 * 4);
  const auto out = dir_ / "rank1.safetensors";
  auto convert = ballast("convert " + shell_quote(file_.string()) + " " +
                         shell_quote(out.string()) + " --tensor w --transform " + steps);
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  auto back =
      make_weight_loader()->load_tensor(TensorSpec{.name = "w", .source = WeightSource::file(out)});
  EXPECT_EQ(sha256_hex(*back), sha256_hex(*expected));
}

}  // namespace
}  // namespace ballast::test
