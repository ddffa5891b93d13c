// The `ballast` command line: exit codes, help, --version, the table and JSON outputs, tensor
// selection, casts on hash, and the load report in each read mode.
#include <gtest/gtest.h>

#include <algorithm>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

class Cli : public testing::Test {
 protected:
  void SetUp() override {
    path_ = (dir_ / "m.safetensors").string();
    write_file(path_, safetensors_file({{"layers.0.w", "F32", {2, 2}, f32_bytes({1, 2, 3, 4})},
                                        {"layers.1.w", "F32", {2}, f32_bytes({5, 6})},
                                        {"norm", "F32", {1}, f32_bytes({7})}},
                                       nlohmann::json{{"format", "pt"}}));
  }
  CommandResult ballast(const std::string& args) { return run_command(cli_path() + " " + args); }
  TempDir dir_;
  std::string path_;
};

TEST_F(Cli, ExitCodesFollowTheContract) {
  EXPECT_EQ(ballast("--help").exit_code, 0);
  for (const char* cmd : {"inspect", "hash", "load"})
    EXPECT_EQ(ballast(std::string(cmd) + " --help").exit_code, 0);
  EXPECT_EQ(ballast("").exit_code, 2);
  EXPECT_EQ(ballast("inspect").exit_code, 2);
  EXPECT_EQ(ballast("inspect --bogus " + path_).exit_code, 2);
  EXPECT_EQ(ballast("load --mode fast " + path_).exit_code, 2);
  auto missing = ballast("inspect /nonexistent.safetensors");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(
      missing.err,
      "ballast: error: not_found: no such file or folder (source: /nonexistent.safetensors)\n");
}

TEST_F(Cli, VersionPrintsTheLibrarysVersion) {
  auto r = ballast("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, std::string(version()) + "\n");
  EXPECT_EQ(std::string(version()), std::to_string(BALLAST_VERSION_MAJOR) + "." +
                                        std::to_string(BALLAST_VERSION_MINOR) + "." +
                                        std::to_string(BALLAST_VERSION_PATCH));
}

TEST_F(Cli, InspectTableAndJson) {
  auto table = ballast("inspect " + shell_quote(path_));
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("layers.0.w  f32"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("3 tensors, 28 B (28 bytes)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("format: pt"), std::string::npos) << table.out;
  auto json = nlohmann::json::parse(ballast("inspect --json " + shell_quote(path_)).out);
  EXPECT_EQ(json["source"], path_);
  EXPECT_EQ(json["format"], "safetensors");
  EXPECT_EQ(json["total_size_bytes"], 28);
  ASSERT_EQ(json["tensors"].size(), 3u);
  EXPECT_EQ(json["tensors"][0],
            (nlohmann::json{
                {"name", "layers.0.w"}, {"dtype", "f32"}, {"shape", {2, 2}}, {"nbytes", 16}}));
  EXPECT_EQ(json["metadata"], (nlohmann::json{{"format", "pt"}}));
}

// The table keeps the first items of a long array at any depth, counting the rest; objects in
// an object cost no re-scan of their siblings (nlohmann's callback parser made that quadratic).
TEST_F(Cli, InspectTableSummarizesLongArraysAndManyObjects) {
  nlohmann::json metadata = {{"list", nlohmann::json::array()},
                             {"objects", nlohmann::json::object()}};
  for (int i = 0; i < 12; ++i) metadata["list"].push_back({{"x", i}});
  for (int i = 0; i < 20000; ++i) metadata["objects"]["k" + std::to_string(i)] = {{"v", i}};
  write_file(dir_ / "m.safetensors.index.json", nlohmann::json{{"metadata", metadata},
                                                               {"weight_map",
                                                                {{"layers.0.w", "m.safetensors"},
                                                                 {"layers.1.w", "m.safetensors"},
                                                                 {"norm", "m.safetensors"}}}}
                                                    .dump());
  auto table = ballast("inspect " + shell_quote((dir_ / "m.safetensors.index.json").string()));
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("  list: [12 items: {\"x\":0}, {\"x\":1}, {\"x\":2}, ...]\n"),
            std::string::npos)
      << table.out.substr(0, 2000);
  EXPECT_NE(table.out.find("  objects: {\"k0\":{\"v\":0},\"k1\":{\"v\":1}"), std::string::npos)
      << table.out.substr(0, 2000);
}

TEST_F(Cli, HashSelectsTensorsAndCasts) {
  auto r = ballast("hash --json --tensor 'layers.*' --dtype f16 " + shell_quote(path_));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto tensors = nlohmann::json::parse(r.out)["tensors"];
  EXPECT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors["layers.1.w"]["dtype"], "f16");
  auto api = make_weight_loader()->load_tensor(TensorSpec{.name = "layers.1.w",
                                                          .source = WeightSource::file(path_),
                                                          .transformations = {Cast{DType::f16}}});
  EXPECT_EQ(tensors["layers.1.w"]["sha256"], sha256_hex(*api));
  auto text = ballast("hash --tensor norm " + shell_quote(path_));
  EXPECT_NE(text.out.find("  norm  f32  [1]"), std::string::npos) << text.out;
  EXPECT_EQ(ballast("hash --tensor 'nothing*' " + shell_quote(path_)).exit_code, 1);
  auto transformed = nlohmann::json::parse(
      ballast("hash --json --tensor layers.0.w --transform transpose:0:1,slice:0:1: " +
              shell_quote(path_))
          .out);
  EXPECT_EQ(transformed["tensors"]["layers.0.w"]["shape"], (Shape{1, 2}));
}

TEST_F(Cli, LoadReportsEveryMode) {
  for (const char* mode : {"auto", "mmap", "read"}) {
    auto r =
        ballast(std::string("load --json --threads 2 --mode ") + mode + " " + shell_quote(path_));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.err.empty()) << "no progress bar when not on a terminal: " << r.err;
    auto report = nlohmann::json::parse(r.out);
    EXPECT_EQ(report["tensors"], 3);
    EXPECT_EQ(report["bytes"], 28);
    EXPECT_EQ(report["threads"], 2);
    EXPECT_GT(report["peak_rss_bytes"].get<uint64_t>(), 0u);
    EXPECT_EQ(report["zero_copy_bytes"].get<uint64_t>() > 0, std::string(mode) != "read") << mode;
  }
  auto text = ballast("load " + shell_quote(path_));
  EXPECT_NE(text.out.find("loaded 3 tensors"), std::string::npos) << text.out;
  // --repeat N: N whole loads in one process, the median reported, each one listed.
  auto repeated =
      nlohmann::json::parse(ballast("load --json --repeat 3 " + shell_quote(path_)).out);
  ASSERT_EQ(repeated["seconds_each"].size(), 3u);
  std::vector<double> each = repeated["seconds_each"];
  std::sort(each.begin(), each.end());
  EXPECT_EQ(repeated["seconds"].get<double>(), each[1]);
  EXPECT_EQ(repeated["tensors"], 3);
  EXPECT_EQ(ballast("load --repeat 0 " + shell_quote(path_)).exit_code, 2);
  EXPECT_NE(text.out.find("GB/s"), std::string::npos) << text.out;
}

// --arena: the tensors go into one block sized from the metadata (cast included), every load
// of a --repeat into the same block; it cannot size the outputs of --transform.
TEST_F(Cli, LoadIntoAnArena) {
  auto r = ballast("load --json --arena --mode read --repeat 2 --dtype f64 " + shell_quote(path_));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["tensors"], 3);
  EXPECT_EQ(report["bytes"], 56);  // 7 elements of 8 bytes
  EXPECT_EQ(report["zero_copy_bytes"], 0);
  EXPECT_GE(report["arena_bytes"].get<uint64_t>(), 56u);
  EXPECT_EQ(nlohmann::json::parse(ballast("load --json " + shell_quote(path_)).out)["arena_bytes"],
            0);
  EXPECT_EQ(ballast("load --arena --transform transpose " + shell_quote(path_)).exit_code, 2);
}

TEST_F(Cli, TablesListNamesInNaturalOrderAndCountInWords) {
  const std::string path = (dir_ / "layers.safetensors").string();
  write_file(path, safetensors_file({{"layers.10.w", "F32", {1}, f32_bytes({1})},
                                     {"layers.2.w", "F32", {1}, f32_bytes({2})},
                                     {"layers.1.w", "F32", {1}, f32_bytes({3})}}));
  auto table = ballast("inspect " + shell_quote(path));
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const size_t one = table.out.find("layers.1.w"), two = table.out.find("layers.2.w"),
               ten = table.out.find("layers.10.w");
  ASSERT_NE(ten, std::string::npos) << table.out;
  EXPECT_TRUE(one < two && two < ten) << table.out;

  const std::string single = (dir_ / "one.safetensors").string();
  write_file(single, safetensors_file({{"w", "F32", {1}, f32_bytes({1})}}));
  auto one_tensor = ballast("inspect " + shell_quote(single));
  EXPECT_NE(one_tensor.out.find("\n1 tensor, "), std::string::npos) << one_tensor.out;
  auto load = ballast("load " + shell_quote(single));
  EXPECT_NE(load.out.find("loaded 1 tensor, "), std::string::npos) << load.out;
}

TEST_F(Cli, ConvertRefusesToOverwriteItsInput) {
  const std::string before = read_file(path_);
  auto same = ballast("convert " + shell_quote(path_) + " " + shell_quote(path_));
  EXPECT_EQ(same.exit_code, 1) << same.out;
  EXPECT_NE(same.err.find("would overwrite its input"), std::string::npos) << same.err;
  EXPECT_EQ(read_file(path_), before);
  // The same file by another name is the same file.
  const std::string other_name = (dir_ / "." / "m.safetensors").string();
  EXPECT_EQ(ballast("convert " + shell_quote(path_) + " " + shell_quote(other_name)).exit_code, 1);
}

}  // namespace
}  // namespace ballast::test
