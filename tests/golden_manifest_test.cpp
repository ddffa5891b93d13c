// Every file of the golden corpus (../shared/golden, written by the formats' real writers, plus
// real-world files) checked against manifest.json through the API and through the CLI: names,
// dtypes, shapes, byte counts, content hashes, f32 hashes and metadata; files the manifest
// expects to be refused must fail with a clean ballast::Error and CLI exit status 1.
#include <gtest/gtest.h>

#include <set>

#include "ballast/ballast.hpp"
#include "support/golden_cases.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;

// Test parameters are manifest paths (short names in ctest output); entries are looked up.
class GoldenFile : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    BALLAST_REQUIRE_GOLDEN();
    const json& entry = golden_entry(GetParam());
    format_ = entry["format"].get<std::string>();
    if (!find_format_parser(parse_format(format_)))
      GTEST_SKIP() << "format " << format_ << " is not built into this library";
    path_ = (*golden_dir() / entry["path"].get<std::string>()).string();
    source_ = WeightSource::file(path_);
    apply_golden_raw_layout(entry, source_);
    if (format_ == "raw") {
      const json& args = entry["format_info"]["reader_args"];
      cli_args_ = " --format raw --dtype " + args["dtype"].get<std::string>() + " --shape " +
                  shape_arg(args["shape"].get<Shape>());
    }
  }

  static std::string shape_arg(const Shape& shape) {
    std::string s;
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
    return s.empty() ? "scalar" : s;
  }

  std::string cli(const std::string& command) const {
    return cli_path() + " " + command + " " + shell_quote(path_) + cli_args_;
  }

  std::string format_, path_, cli_args_;
  WeightSource source_;
};

// Manifest metadata values may summarise long arrays as {"len", "first", "sha256"}.
void expect_metadata_value(const std::string& key, const json& expected, const json& actual) {
  if (expected.is_object() && expected.contains("len") && expected.contains("sha256") &&
      actual.is_array()) {
    EXPECT_EQ(actual.size(), expected["len"].get<size_t>()) << key;
    for (size_t i = 0; i < expected["first"].size() && i < actual.size(); ++i)
      EXPECT_EQ(actual[i], expected["first"][i]) << key << "[" << i << "]";
    return;
  }
  EXPECT_EQ(actual, expected) << "metadata key " << key;
}

TEST_P(GoldenFile, ApiGivesManifestTensors) {
  const json& entry = golden_entry(GetParam());
  auto loader = make_weight_loader();
  if (entry["expect"] == "error") {
    EXPECT_THROW(
        {
          auto meta = loader->get_metadata(source_);
          for (const auto& [name, info] : meta.tensors)
            loader->load_tensor(TensorSpec{.name = name, .source = source_});
        },
        Error);
    return;
  }
  WeightMetadata meta = loader->get_metadata(source_);
  EXPECT_EQ(to_string(meta.format), format_);
  std::set<std::string> skippable;
  if (entry.contains("skippable"))
    for (auto& [name, why] : entry["skippable"].items()) skippable.insert(name);
  for (const auto& [name, info] : meta.tensors)
    EXPECT_TRUE(entry["tensors"].contains(name) || skippable.count(name))
        << "unexpected tensor " << name;
  for (auto& [name, want] : entry["tensors"].items()) {
    SCOPED_TRACE(name);
    auto it = meta.tensors.find(name);
    ASSERT_NE(it, meta.tensors.end()) << "missing tensor " << name;
    EXPECT_EQ(dtype_name(it->second.dtype), want["dtype"].get<std::string>());
    EXPECT_EQ(it->second.shape, want["shape"].get<Shape>());
    EXPECT_EQ(it->second.nbytes, want["nbytes"].get<uint64_t>());
    auto tensor = loader->load_tensor(TensorSpec{.name = name, .source = source_});
    EXPECT_EQ(sha256_hex(*tensor), want["sha256"].get<std::string>());
    if (want.contains("sha256_f32")) {
      auto f32 = loader->load_tensor(
          TensorSpec{.name = name, .source = source_, .transformations = {Cast{DType::f32}}});
      EXPECT_EQ(sha256_hex(*f32), want["sha256_f32"].get<std::string>()) << "f32 cast";
    }
  }
  if (entry.contains("metadata") && entry["metadata"].is_object()) {
    json extra = json::parse(meta.extra);
    for (auto& [key, value] : entry["metadata"].items()) {
      ASSERT_TRUE(extra.contains(key)) << "metadata lacks " << key;
      expect_metadata_value(key, value, extra[key]);
    }
  }
}

TEST_P(GoldenFile, CliGivesManifestTensors) {
  const json& entry = golden_entry(GetParam());
  if (entry["expect"] == "error") {
    auto r = run_command(cli("hash --json"));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err.rfind("ballast: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    return;
  }
  auto inspect = run_command(cli("inspect --json"));
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  json listing = json::parse(inspect.out);
  EXPECT_EQ(listing["format"], format_);
  uint64_t total = 0;
  std::map<std::string, json> listed;
  for (const auto& t : listing["tensors"]) listed[t["name"]] = t;
  for (auto& [name, want] : entry["tensors"].items()) {
    ASSERT_TRUE(listed.count(name)) << name;
    EXPECT_EQ(listed[name]["dtype"], want["dtype"]) << name;
    EXPECT_EQ(listed[name]["shape"], want["shape"]) << name;
    EXPECT_EQ(listed[name]["nbytes"], want["nbytes"]) << name;
  }
  for (const auto& [name, t] : listed) total += t["nbytes"].get<uint64_t>();
  EXPECT_EQ(listing["total_size_bytes"].get<uint64_t>(), total);

  auto hashed = run_command(cli("hash --json"));
  ASSERT_EQ(hashed.exit_code, 0) << hashed.err;
  json hashes = json::parse(hashed.out)["tensors"];
  for (auto& [name, want] : entry["tensors"].items()) {
    ASSERT_TRUE(hashes.contains(name)) << name;
    EXPECT_EQ(hashes[name]["sha256"], want["sha256"]) << name;
    EXPECT_EQ(hashes[name]["dtype"], want["dtype"]) << name;
    EXPECT_EQ(hashes[name]["shape"], want["shape"]) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Manifest, GoldenFile, testing::ValuesIn(golden_case_paths()),
                         golden_case_name);

}  // namespace
}  // namespace ballast::test
