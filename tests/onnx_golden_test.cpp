// Every ONNX entry of the golden corpus (onnx/, real-world/silero, real-world/onnx-backend) gives
// the manifest's names, dtypes, shapes, sha256 and metadata through the API and the CLI.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "ballast/ballast.hpp"
#include "support/test_support.hpp"

namespace ballast {
namespace {

using nlohmann::json;
using test::golden_dir;

std::vector<json> onnx_entries() {
  auto entries = test::golden_entries("onnx");
  EXPECT_EQ(entries.size(), 17u);  // 4 generated models, 2 silero, 11 onnx-backend
  return entries;
}

// Each key the manifest lists under "metadata" must be in the parsed extra, equal.
void expect_metadata(const json& expected, const json& got, const std::string& path) {
  ASSERT_TRUE(got.is_object()) << path;
  for (const auto& [key, value] : expected.items()) {
    ASSERT_TRUE(got.contains(key)) << path << " lacks metadata key " << key;
    EXPECT_EQ(got[key], value) << path << " metadata " << key;
  }
  for (const auto& item : got.items()) {
    if (item.key() != "__onnx__") {
      EXPECT_TRUE(expected.contains(item.key())) << path << " extra key " << item.key();
    }
  }
}

TEST(OnnxGolden, ApiMatchesManifest) {
  BALLAST_REQUIRE_GOLDEN();
  auto loader = make_weight_loader();
  for (const auto& entry : onnx_entries()) {
    const auto path = *golden_dir() / entry["path"].get<std::string>();
    SCOPED_TRACE(path.string());
    const auto source = WeightSource::file(path);
    WeightMetadata meta = loader->get_metadata(source);
    EXPECT_EQ(meta.format, WeightFormat::onnx());
    const json& tensors = entry["tensors"];
    ASSERT_EQ(meta.tensors.size(), tensors.size());
    expect_metadata(entry["metadata"], json::parse(meta.extra), path.string());
    for (const auto& [name, want] : tensors.items()) {
      ASSERT_TRUE(meta.tensors.contains(name)) << name;
      const TensorInfo& info = meta.tensors.at(name);
      EXPECT_EQ(dtype_name(info.dtype), want["dtype"].get<std::string>()) << name;
      EXPECT_EQ(info.shape, want["shape"].get<Shape>()) << name;
      EXPECT_EQ(info.nbytes, want["nbytes"].get<uint64_t>()) << name;
      TensorRef t = loader->load_tensor(TensorSpec{.name = name, .source = source});
      EXPECT_EQ(sha256_hex(*t), want["sha256"].get<std::string>()) << name;
    }
  }
}

TEST(OnnxGolden, ConstantWeightsRecordTheirTensorProtoName) {
  BALLAST_REQUIRE_GOLDEN();
  const auto path = *golden_dir() / "real-world/silero/silero_vad_v6.onnx";
  json extra = json::parse(make_weight_loader()->get_metadata(WeightSource::file(path)).extra);
  const json& names = extra["__onnx__"]["tensor_names"];
  EXPECT_EQ(names["If_0_else_branch__Inline_0__encoder.0.reparam_conv.weight"],
            "encoder.0.reparam_conv.weight");
  EXPECT_FALSE(names.contains("Constant_0_output"));  // its TensorProto has no name
  EXPECT_EQ(extra["__onnx__"]["producer_name"], "spox");
  EXPECT_EQ(extra["__onnx__"]["opset_import"]["ai.onnx"], 16);
}

TEST(OnnxGolden, CliInspectAndHashMatchManifest) {
  BALLAST_REQUIRE_GOLDEN();
  for (const auto& entry : onnx_entries()) {
    const auto path = (*golden_dir() / entry["path"].get<std::string>()).string();
    SCOPED_TRACE(path);
    const json& tensors = entry["tensors"];

    auto inspect = test::run_command(test::shell_quote(test::cli_path()) + " inspect --json " +
                                     test::shell_quote(path));
    ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
    json got = json::parse(inspect.out);
    EXPECT_EQ(got["format"], "onnx");
    expect_metadata(entry["metadata"], got["metadata"], path);
    ASSERT_EQ(got["tensors"].size(), tensors.size());
    uint64_t total = 0;
    for (const auto& t : got["tensors"]) {
      const std::string name = t["name"];
      ASSERT_TRUE(tensors.contains(name)) << name;
      EXPECT_EQ(t["dtype"], tensors[name]["dtype"]) << name;
      EXPECT_EQ(t["shape"], tensors[name]["shape"]) << name;
      EXPECT_EQ(t["nbytes"], tensors[name]["nbytes"]) << name;
      total += t["nbytes"].get<uint64_t>();
    }
    EXPECT_EQ(got["total_size_bytes"].get<uint64_t>(), total);

    auto hash = test::run_command(test::shell_quote(test::cli_path()) + " hash --json " +
                                  test::shell_quote(path));
    ASSERT_EQ(hash.exit_code, 0) << hash.err;
    json hashes = json::parse(hash.out)["tensors"];
    ASSERT_EQ(hashes.size(), tensors.size());
    for (const auto& [name, want] : tensors.items()) {
      ASSERT_TRUE(hashes.contains(name)) << name;
      EXPECT_EQ(hashes[name]["dtype"], want["dtype"]) << name;
      EXPECT_EQ(hashes[name]["shape"], want["shape"]) << name;
      EXPECT_EQ(hashes[name]["sha256"], want["sha256"]) << name;
    }
  }
}

}  // namespace
}  // namespace ballast
