// WeightSource::Memory for every format: each single-file golden checkpoint read into memory
// loads, with its format detected from the bytes, to exactly the manifest's hashes; a
// safetensors buffer is served zero-copy (tensors point into the caller's bytes).
#include <gtest/gtest.h>

#include "ballast/ballast.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;

std::vector<std::string> single_file_cases() {
  std::vector<std::string> paths;
  const auto& manifest = golden_manifest();
  if (manifest.contains("files"))
    for (const auto& f : manifest["files"])
      if (f["expect"] != "error" && !f.contains("companion_files")) paths.push_back(f["path"]);
  if (paths.empty()) paths.push_back("absent");
  return paths;
}

std::string test_name(const testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

class GoldenFromMemory : public testing::TestWithParam<std::string> {};

TEST_P(GoldenFromMemory, HashesEqualTheManifest) {
  BALLAST_REQUIRE_GOLDEN();
  json entry;
  for (const auto& f : golden_manifest()["files"])
    if (f["path"] == GetParam()) entry = f;
  const std::string bytes = read_file(*golden_dir() / GetParam());
  WeightSource source =
      WeightSource::memory(MemorySource::copy_of(std::as_bytes(std::span(bytes))));
  const std::string format = entry["format"];
  if (format == "raw") {
    const json& args = entry["format_info"]["reader_args"];
    source.format = WeightFormat::raw();
    source.raw_layout = RawLayout{*parse_dtype(args["dtype"].get<std::string>()),
                                  args["shape"].get<Shape>(), args["offset"].get<uint64_t>()};
  }
  auto loader = create_weight_loader();
  WeightMetadata meta = loader->get_metadata(source);
  EXPECT_EQ(to_string(meta.format), format);
  for (auto& [name, want] : entry["tensors"].items()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(meta.tensors.count(name)) << "missing tensor " << name;
    auto tensor = loader->load_tensor(TensorSpec{.name = name, .source = source});
    EXPECT_EQ(sha256_hex(*tensor), want["sha256"].get<std::string>());
  }
}

INSTANTIATE_TEST_SUITE_P(Manifest, GoldenFromMemory, testing::ValuesIn(single_file_cases()),
                         test_name);

TEST(MemorySource, SafetensorsIsZeroCopy) {
  BALLAST_REQUIRE_GOLDEN();
  const auto path = *golden_dir() / "safetensors/st_all_dtypes.safetensors";
  const std::string bytes = read_file(path);
  auto owner = std::make_shared<std::string>(bytes);
  MemorySource memory{std::as_bytes(std::span(*owner)), owner, std::nullopt};
  auto loader = create_weight_loader();
  const WeightSource source = WeightSource::memory(memory);
  size_t inside = 0;
  for (const auto& [name, info] : loader->get_metadata(source).tensors) {
    auto t = loader->load_tensor(TensorSpec{.name = name, .source = source});
    const auto* p = reinterpret_cast<const std::byte*>(t->data());
    if (t->nbytes() > 0 && p >= memory.bytes.data() &&
        p + t->nbytes() <= memory.bytes.data() + memory.bytes.size())
      ++inside;
  }
  EXPECT_GT(inside, 0u);
}

}  // namespace
}  // namespace ballast::test
