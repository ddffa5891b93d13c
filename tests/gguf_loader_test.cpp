// GGUF through the public API and the CLI: every gguf/ and real-world GGUF file in the golden
// manifest gives its names, dtypes, row-major shapes, byte counts and hashes through
// make_weight_loader() and through `ballast inspect --json` / `ballast hash --json`, f32
// casts of f16 and block tensors give the manifest's sha256_f32, and bad files fail cleanly.
#include <gtest/gtest.h>

#include "ballast/error.hpp"
#include "ballast/hash.hpp"
#include "ballast/loader.hpp"
#include "support/test_support.hpp"

namespace ballast {
namespace {

using nlohmann::json;

std::vector<json> ok_entries() {
  std::vector<json> out;
  for (json& e : test::golden_entries("gguf"))
    if (e["expect"] == "ok") out.push_back(std::move(e));
  return out;
}

std::filesystem::path path_of(const json& entry) {
  return *test::golden_dir() / entry["path"].get<std::string>();
}

json run_json(const std::string& args) {
  const auto r = test::run_command(test::shell_quote(test::cli_path()) + " " + args);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json();
}

TEST(GgufLoaderGolden, MetadataAndTensorsThroughTheApi) {
  BALLAST_REQUIRE_GOLDEN();
  auto loader = make_weight_loader();
  for (const json& entry : ok_entries()) {
    SCOPED_TRACE(entry["path"].get<std::string>());
    const WeightSource source = WeightSource::file(path_of(entry));
    const WeightMetadata meta = loader->get_metadata(source);
    EXPECT_EQ(meta.format, WeightFormat::gguf());
    ASSERT_EQ(meta.tensors.size(), entry["tensors"].size());
    const json extra = json::parse(meta.extra);
    for (const auto& [key, value] : entry["metadata"].items()) {
      if (!value.is_object()) {
        EXPECT_EQ(extra[key], value) << key;
      }
    }
    for (const auto& [name, want] : entry["tensors"].items()) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(meta.tensors.contains(name));
      const TensorInfo& info = meta.tensors.at(name);
      EXPECT_EQ(dtype_name(info.dtype), want["dtype"]);
      EXPECT_EQ(json(info.shape), want["shape"]);
      EXPECT_EQ(info.nbytes, want["nbytes"]);
      const TensorRef t = loader->load_tensor(TensorSpec{.name = name, .source = source});
      EXPECT_EQ(dtype_name(t->dtype()), want["dtype"]);
      EXPECT_EQ(json(t->shape()), want["shape"]);
      EXPECT_EQ(t->nbytes(), want["nbytes"]);
      EXPECT_EQ(sha256_hex(*t), want["sha256"]);
    }
  }
}

TEST(GgufLoaderGolden, CastToF32GivesTheDequantizedHashes) {
  BALLAST_REQUIRE_GOLDEN();
  auto loader = make_weight_loader();
  for (const json& entry : ok_entries()) {
    const WeightSource source = WeightSource::file(path_of(entry));
    for (const auto& [name, want] : entry["tensors"].items()) {
      if (!want.contains("sha256_f32")) continue;
      SCOPED_TRACE(name);
      const TensorRef t = loader->load_tensor(
          TensorSpec{.name = name, .source = source, .transformations = {Cast{DType::f32}}});
      EXPECT_EQ(t->dtype(), DType::f32);
      EXPECT_EQ(sha256_hex(*t), want["sha256_f32"]);
    }
  }
}

TEST(GgufLoaderGolden, BadFilesFailCleanly) {
  BALLAST_REQUIRE_GOLDEN();
  auto loader = make_weight_loader();
  const auto code_of = [&](const char* file) {
    try {
      loader->get_metadata(WeightSource::file(*test::golden_dir() / file));
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::cancelled;  // "did not throw"
  };
  EXPECT_EQ(code_of("bad/truncated_test.gguf"), ErrorCode::invalid_format);
  EXPECT_EQ(code_of("bad/big_endian.gguf"), ErrorCode::unsupported);
}

TEST(GgufCliGolden, InspectJsonMatchesTheManifest) {
  BALLAST_REQUIRE_GOLDEN();
  for (const json& entry : ok_entries()) {
    SCOPED_TRACE(entry["path"].get<std::string>());
    const json out = run_json("inspect --json " + test::shell_quote(path_of(entry).string()));
    EXPECT_EQ(out["format"], "gguf");
    uint64_t total = 0;
    ASSERT_EQ(out["tensors"].size(), entry["tensors"].size());
    for (const json& t : out["tensors"]) {
      const std::string name = t["name"];
      SCOPED_TRACE(name);
      ASSERT_TRUE(entry["tensors"].contains(name));
      const json& want = entry["tensors"][name];
      EXPECT_EQ(t["dtype"], want["dtype"]);
      EXPECT_EQ(t["shape"], want["shape"]);
      EXPECT_EQ(t["nbytes"], want["nbytes"]);
      total += t["nbytes"].get<uint64_t>();
    }
    EXPECT_EQ(out["total_size_bytes"], total);
    for (const auto& [key, value] : entry["metadata"].items()) {
      SCOPED_TRACE(key);
      ASSERT_TRUE(out["metadata"].contains(key));
      if (value.is_object()) {  // a long array, complete in --json
        EXPECT_EQ(out["metadata"][key].size(), value["len"].get<size_t>());
      } else {
        EXPECT_EQ(out["metadata"][key], value);
      }
    }
  }
}

TEST(GgufCliGolden, HashJsonMatchesTheManifest) {
  BALLAST_REQUIRE_GOLDEN();
  for (const json& entry : ok_entries()) {
    SCOPED_TRACE(entry["path"].get<std::string>());
    const json out = run_json("hash --json " + test::shell_quote(path_of(entry).string()));
    ASSERT_EQ(out["tensors"].size(), entry["tensors"].size());
    for (const auto& [name, want] : entry["tensors"].items()) {
      SCOPED_TRACE(name);
      const json& got = out["tensors"][name];
      EXPECT_EQ(got["dtype"], want["dtype"]);
      EXPECT_EQ(got["shape"], want["shape"]);
      EXPECT_EQ(got["sha256"], want["sha256"]);
    }
  }
}

TEST(GgufCliGolden, HashAsF32MatchesTheDequantizedHashes) {
  BALLAST_REQUIRE_GOLDEN();
  for (const json& entry : ok_entries()) {
    SCOPED_TRACE(entry["path"].get<std::string>());
    const json out =
        run_json("hash --json --dtype f32 " + test::shell_quote(path_of(entry).string()));
    for (const auto& [name, want] : entry["tensors"].items()) {
      if (!want.contains("sha256_f32") && want["dtype"] != "f32") continue;  // i8 ... as f32
      SCOPED_TRACE(name);
      EXPECT_EQ(out["tensors"][name]["dtype"], "f32");
      EXPECT_EQ(out["tensors"][name]["sha256"],
                want.contains("sha256_f32") ? want["sha256_f32"] : want["sha256"]);
    }
  }
}

TEST(GgufCliGolden, BadFilesGiveOneLineErrors) {
  BALLAST_REQUIRE_GOLDEN();
  for (const char* file : {"bad/truncated_test.gguf", "bad/big_endian.gguf"}) {
    SCOPED_TRACE(file);
    const auto r = test::run_command(test::shell_quote(test::cli_path()) + " inspect " +
                                     test::shell_quote((*test::golden_dir() / file).string()));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(r.err.starts_with("ballast: error: ")) << r.err;
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ballast
