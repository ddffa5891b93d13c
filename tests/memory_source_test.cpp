// WeightSource::Memory for every format: each single-file golden checkpoint read into memory
// loads, with its format detected from the bytes, to exactly the manifest's hashes; a
// safetensors buffer is served zero-copy (tensors point into the caller's bytes).
#include <gtest/gtest.h>

#include "ballast/ballast.hpp"
#include "support/golden_cases.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;

class GoldenFromMemory : public testing::TestWithParam<std::string> {};

TEST_P(GoldenFromMemory, HashesEqualTheManifest) {
  BALLAST_REQUIRE_GOLDEN();
  const json& entry = golden_entry(GetParam());
  const std::string bytes = read_file(*golden_dir() / GetParam());
  WeightSource source =
      WeightSource::memory(MemorySource::copy_of(std::as_bytes(std::span(bytes))));
  apply_golden_raw_layout(entry, source);
  auto loader = make_weight_loader();
  expect_golden_tensors(*loader, source, entry);
}

// Single-file entries that load: a memory source has no folder for companion files.
INSTANTIATE_TEST_SUITE_P(Manifest, GoldenFromMemory,
                         testing::ValuesIn(golden_case_paths([](const json& f) {
                           return f["expect"] != "error" && !f.contains("companion_files");
                         })),
                         golden_case_name);

TEST(MemorySource, SafetensorsIsZeroCopy) {
  BALLAST_REQUIRE_GOLDEN();
  const auto path = *golden_dir() / "safetensors/st_all_dtypes.safetensors";
  const std::string bytes = read_file(path);
  auto owner = std::make_shared<std::string>(bytes);
  MemorySource memory{std::as_bytes(std::span(*owner)), owner, std::nullopt};
  auto loader = make_weight_loader();
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
