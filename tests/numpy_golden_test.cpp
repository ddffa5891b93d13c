// The golden corpus's NumPy files (numpy/, real-world/numpy, real-world/candle .npy/.npz and
// the bad/ object and structured arrays) through the API and the CLI: names, dtypes, shapes and
// sha256 as in manifest.json; skippable string members listed in the metadata; bad files
// refused cleanly, pickles without being unpickled.
#include <gtest/gtest.h>

#include "ballast/ballast.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;

std::vector<json> numpy_entries() {
  std::vector<json> out;
  if (!golden_dir()) return out;
  for (const auto& f : golden_manifest()["files"]) {
    const std::string path = f["path"];
    const bool npy_or_npz = path.ends_with(".npy") || path.ends_with(".npz");
    if (f["format"] == "numpy" && npy_or_npz) out.push_back(f);
  }
  return out;
}

std::string file_of(const json& entry) {
  return (*golden_dir() / entry["path"].get<std::string>()).string();
}

TEST(NumpyGolden, ApiGivesManifestTensors) {
  BALLAST_REQUIRE_GOLDEN();
  auto entries = numpy_entries();
  ASSERT_GE(entries.size(), 38u);
  auto loader = make_weight_loader();
  for (const auto& entry : entries) {
    SCOPED_TRACE(entry["path"].get<std::string>());
    auto source = WeightSource::file(file_of(entry));
    if (entry["expect"] == "error") {
      try {
        loader->get_metadata(source);
        ADD_FAILURE() << "not refused";
      } catch (const Error& e) {
        EXPECT_TRUE(e.code() == ErrorCode::unsupported || e.code() == ErrorCode::invalid_format)
            << e.what();
      }
      continue;
    }
    WeightMetadata meta = loader->get_metadata(source);
    EXPECT_EQ(meta.format, WeightFormat::numpy());
    EXPECT_EQ(meta.tensors.size(), entry["tensors"].size());
    for (auto& [name, want] : entry["tensors"].items()) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(meta.tensors.count(name));
      EXPECT_EQ(dtype_name(meta.tensors[name].dtype), want["dtype"].get<std::string>());
      EXPECT_EQ(meta.tensors[name].shape, want["shape"].get<Shape>());
      auto tensor = loader->load_tensor(TensorSpec{.name = name, .source = source});
      EXPECT_EQ(tensor->shape(), want["shape"].get<Shape>());
      EXPECT_EQ(sha256_hex(*tensor), want["sha256"].get<std::string>());
    }
    json extra = json::parse(meta.extra);
    if (entry.contains("skippable")) {
      for (auto& [name, why] : entry["skippable"].items()) {
        EXPECT_TRUE(extra["skipped"].contains(name)) << meta.extra;
      }
    }
  }
}

TEST(NumpyGolden, CliInspectAndHashGiveManifestTensors) {
  BALLAST_REQUIRE_GOLDEN();
  for (const auto& entry : numpy_entries()) {
    SCOPED_TRACE(entry["path"].get<std::string>());
    const std::string file = shell_quote(file_of(entry));
    if (entry["expect"] == "error") {
      auto r = run_command(cli_path() + " hash --json " + file);
      EXPECT_EQ(r.exit_code, 1);
      EXPECT_EQ(r.err.rfind("ballast: error: ", 0), 0u) << r.err;
      continue;
    }
    auto inspect = run_command(cli_path() + " inspect --json " + file);
    ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
    json listing = json::parse(inspect.out);
    EXPECT_EQ(listing["format"], "numpy");
    ASSERT_EQ(listing["tensors"].size(), entry["tensors"].size());
    for (const auto& t : listing["tensors"]) {
      const json& want = entry["tensors"][t["name"].get<std::string>()];
      EXPECT_EQ(t["dtype"], want["dtype"]);
      EXPECT_EQ(t["shape"], want["shape"]);
      EXPECT_EQ(t["nbytes"], want["nbytes"]);
    }
    auto hash = run_command(cli_path() + " hash --json " + file);
    ASSERT_EQ(hash.exit_code, 0) << hash.err;
    json hashes = json::parse(hash.out)["tensors"];
    for (auto& [name, want] : entry["tensors"].items()) {
      EXPECT_EQ(hashes[name]["sha256"], want["sha256"]) << name;
      EXPECT_EQ(hashes[name]["dtype"], want["dtype"]) << name;
      EXPECT_EQ(hashes[name]["shape"], want["shape"]) << name;
    }
  }
}

TEST(NumpyGolden, PicklesAreRefusedNamingPickles) {
  BALLAST_REQUIRE_GOLDEN();
  for (const char* path : {"bad/object_pickle.npy", "bad/py2-objarr.npz", "bad/py3-objarr.npy"}) {
    auto r = run_command(cli_path() + " inspect " + shell_quote((*golden_dir() / path).string()));
    EXPECT_EQ(r.exit_code, 1) << path;
    EXPECT_NE(r.err.find("pickle"), std::string::npos) << r.err;
  }
}

TEST(NumpyGolden, PlainNpyIsZeroCopyFortranOrderIsACopy) {
  BALLAST_REQUIRE_GOLDEN();
  auto loader = make_weight_loader();
  auto load = [&](const char* path) {
    return loader->load_tensor(
        TensorSpec{.name = "arr_0", .source = WeightSource::file(*golden_dir() / path)});
  };
  EXPECT_TRUE(load("numpy/f32_3d.npy")->is_zero_copy());
  EXPECT_FALSE(load("numpy/fortran_f32_3x4.npy")->is_zero_copy());
  EXPECT_FALSE(load("numpy/be_f32_2d.npy")->is_zero_copy());
}

}  // namespace
}  // namespace ballast::test
