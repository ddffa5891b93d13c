// torch.save checkpoints written by Debian's python3-torch (support/make_torch_checkpoints.py):
// every dtype in the zip and legacy containers and pickle protocols 0-5, views and shared
// storages, nested checkpoints with optimizer state, tied weights and nn.Parameter, bare
// tensors, big-endian and deflated rewrites, a sharded pytorch_model.bin. Each must give
// torch's own names, dtypes, shapes, hashes and plain values, in read and mmap modes. Pickled
// modules and code are refused, and the code never runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "ballast/ballast.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class TorchCheckpoints : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!python_has("torch")) return;
    dir_ = new TempDir();
    run_python("import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0])",
               {std::string(BALLAST_SOURCE_DIR) + "/tests/support/make_torch_checkpoints.py",
                dir_->path().string()});
    expected_ = new json(json::parse(read_file(dir_->path() / "expected.json")));
  }
  static void TearDownTestSuite() {
    delete expected_;
    delete dir_;
    expected_ = nullptr;
    dir_ = nullptr;
  }
  void SetUp() override {
    BALLAST_REQUIRE_PYTHON("torch");
    ASSERT_NE(expected_, nullptr);
  }

  static WeightSource source(const std::string& name) {
    return WeightSource::file(dir_->path() / name);
  }

  // Checks one file against torch's view of it through a loader in `mode`.
  static void expect_like_torch(const std::string& file, const json& want, ReadMode mode) {
    SCOPED_TRACE(file);
    WeightLoaderConfig config;
    config.read_mode = mode;
    auto loader = make_weight_loader(config);
    WeightMetadata meta = loader->get_metadata(source(file));
    EXPECT_EQ(meta.format, WeightFormat::pytorch());
    std::set<std::string> names;
    for (const auto& [name, info] : meta.tensors) names.insert(name);
    std::set<std::string> want_names;
    for (const auto& [name, t] : want["tensors"].items()) want_names.insert(name);
    EXPECT_EQ(names, want_names);
    for (const auto& [name, t] : want["tensors"].items()) {
      SCOPED_TRACE(name);
      auto tensor = loader->load_tensor(TensorSpec{.name = name, .source = source(file)});
      EXPECT_EQ(dtype_name(tensor->dtype()), t["dtype"].get<std::string>());
      EXPECT_EQ(tensor->shape(), t["shape"].get<Shape>());
      EXPECT_EQ(sha256_hex(*tensor), t["sha256"].get<std::string>());
    }
    if (file == "sharded") return;
    json extra = json::parse(meta.extra);
    EXPECT_EQ(extra["container"], want["container"]);
    if (!want["values"].empty()) {
      EXPECT_EQ(extra["values"], want["values"]);
    }
  }

  static TempDir* dir_;
  static json* expected_;
};

TempDir* TorchCheckpoints::dir_ = nullptr;
json* TorchCheckpoints::expected_ = nullptr;

TEST_F(TorchCheckpoints, EveryFileGivesTorchsTensorsInReadMode) {
  EXPECT_GE(expected_->size(), 26u);
  for (const auto& [file, want] : expected_->items()) expect_like_torch(file, want, ReadMode::read);
}

TEST_F(TorchCheckpoints, EveryFileGivesTorchsTensorsInMmapMode) {
  for (const auto& [file, want] : expected_->items()) expect_like_torch(file, want, ReadMode::mmap);
}

TEST_F(TorchCheckpoints, ContiguousZipTensorsAreZeroCopyAndViewsAreCopied) {
  WeightLoaderConfig config;
  config.read_mode = ReadMode::mmap;
  auto loader = make_weight_loader(config);
  auto load = [&](const std::string& name) {
    return loader->load_tensor(TensorSpec{.name = name, .source = source("views_zip.pt")});
  };
  EXPECT_TRUE(load("base")->is_zero_copy());
  EXPECT_TRUE(load("offset_rows")->is_zero_copy());  // contiguous, at an offset in its storage
  EXPECT_FALSE(load("transposed")->is_zero_copy());
  EXPECT_FALSE(load("expanded")->is_zero_copy());
}

TEST_F(TorchCheckpoints, TiedWeightsShareOneStorage) {
  auto loader = make_weight_loader();
  auto embed = loader->load_tensor({.name = "tied.embed", .source = source("nested_zip.pt")});
  auto head = loader->load_tensor({.name = "tied.lm_head", .source = source("nested_zip.pt")});
  EXPECT_EQ(sha256_hex(*embed), sha256_hex(*head));
  EXPECT_EQ(embed->data(), head->data()) << "both are views of the one mapped storage";
}

TEST_F(TorchCheckpoints, BareTensorIsNamedEmpty) {
  auto loader = make_weight_loader();
  auto t = loader->load_tensor({.source = source("bare_zip.pt")});
  EXPECT_EQ(t->shape(), (Shape{2, 3}));
  EXPECT_EQ(t->dtype(), DType::i32);
}

TEST_F(TorchCheckpoints, PickledCodeIsRefusedAndNeverRuns) {
  auto loader = make_weight_loader();
  const std::pair<const char*, const char*> refused[] = {
      {"refused_evil_zip.pt", "posix.system"},
      {"refused_evil_legacy.pt", "posix.system"},
      {"refused_module.pt", "torch.nn.modules.linear.Linear"}};
  for (const auto& [file, global] : refused) {
    SCOPED_TRACE(file);
    try {
      loader->get_metadata(source(file));
      FAIL() << "loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::unsupported);
      EXPECT_NE(std::string(e.what()).find(global), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(fs::exists(dir_->path() / "PWNED"));
}

TEST_F(TorchCheckpoints, CliHashesMatchTorch) {
  for (const char* file : {"nested_legacy.pt", "dtypes_zip_big_endian.pt", "sharded"}) {
    SCOPED_TRACE(file);
    auto r =
        run_command(cli_path() + " hash --json " + shell_quote((dir_->path() / file).string()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json hashes = json::parse(r.out)["tensors"];
    for (const auto& [name, t] : (*expected_)[file]["tensors"].items())
      EXPECT_EQ(hashes[name]["sha256"], t["sha256"]) << name;
  }
}

}  // namespace
}  // namespace ballast::test
