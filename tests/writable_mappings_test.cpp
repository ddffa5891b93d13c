// WeightLoaderConfig::mapped_writes: zero-copy tensors of mapped files that the caller may
// write in place, through private copy-on-write mappings: per_call, a write changes neither the
// file nor a tensor of another call; per_loader, calls share one mapping per file; refused
// (the default), mapped tensors say they are read-only. A memory source's tensors stay views
// of the caller's bytes.
#include <gtest/gtest.h>

#include <cstring>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

class WritableMappings : public testing::Test {
 protected:
  void SetUp() override {
    // "b" starts 4 bytes in: its private mapping begins mid-page.
    write_file(path_, safetensors_file({{"a", "F32", {1}, f32_bytes({1.0f})},
                                        {"b", "F32", {4096}, f32_bytes(std::vector(4096, 2.0f))}}));
  }

  TensorRef load(const std::string& name, bool writable) {
    return make_weight_loader(
               {.read_mode = ReadMode::mmap,
                .mapped_writes = writable ? MappedWrites::per_call : MappedWrites::refused})
        ->load_tensor({.name = name, .source = WeightSource::file(path_)});
  }

  TempDir dir_;
  std::filesystem::path path_ = dir_.path() / "m.safetensors";
};

TEST_F(WritableMappings, OffMappedTensorsAreReadOnly) {
  auto b = load("b", false);
  EXPECT_TRUE(b->is_zero_copy());
  EXPECT_FALSE(b->storage()->writable());
}

TEST_F(WritableMappings, AWriteStaysInItsTensor) {
  const std::string before = read_file(path_);
  auto loader =
      make_weight_loader({.read_mode = ReadMode::mmap, .mapped_writes = MappedWrites::per_call});
  const TensorSpec spec{.name = "b", .source = WeightSource::file(path_)};
  auto first = loader->load_tensor(spec);
  ASSERT_TRUE(first->is_zero_copy());
  ASSERT_TRUE(first->storage()->writable());
  const float seven = 7.0f;
  auto* data = first->storage()->data() + first->storage_offset();
  for (size_t i = 0; i < 4096; ++i) std::memcpy(data + 4 * i, &seven, 4);
  EXPECT_EQ(first->as<float>()[4095], 7.0f);
  // Another call of the same loader, and the file, still hold the stored values.
  auto second = loader->load_tensor(spec);
  EXPECT_TRUE(second->is_zero_copy());
  EXPECT_EQ(second->as<float>()[0], 2.0f);
  EXPECT_EQ(second->as<float>()[4095], 2.0f);
  EXPECT_EQ(read_file(path_), before);
}

TEST_F(WritableMappings, ABatchMapsEachFileOnce) {
  auto loader =
      make_weight_loader({.read_mode = ReadMode::mmap, .mapped_writes = MappedWrites::per_call});
  auto both = loader->load_tensors({{.name = "a", .source = WeightSource::file(path_)},
                                    {.name = "b", .source = WeightSource::file(path_)}});
  EXPECT_EQ(both[1]->data() - both[0]->data(), 4) << "one mapping of the file for the batch";
  EXPECT_TRUE(both[0]->storage()->writable());
  EXPECT_EQ(both[0]->as<float>()[0], 1.0f);
  EXPECT_EQ(both[1]->as<float>()[10], 2.0f);
}

TEST_F(WritableMappings, PerLoaderCallsShareOneMappingPerFile) {
  const std::string before = read_file(path_);
  auto loader =
      make_weight_loader({.read_mode = ReadMode::mmap, .mapped_writes = MappedWrites::per_loader});
  const TensorSpec spec{.name = "b", .source = WeightSource::file(path_)};
  auto first = loader->load_tensor(spec);
  ASSERT_TRUE(first->storage()->writable());
  const float seven = 7.0f;
  std::memcpy(first->storage()->data() + first->storage_offset(), &seven, 4);
  auto second = loader->load_tensor(spec);
  EXPECT_EQ(second->data(), first->data());
  EXPECT_EQ(second->as<float>()[0], 7.0f);
  EXPECT_EQ(read_file(path_), before);
  // Another loader has mappings of its own.
  EXPECT_EQ(load("b", true)->as<float>()[0], 2.0f);
}

TEST_F(WritableMappings, AMemorySourceStaysAViewOfTheCallersBytes) {
  const std::string bytes = read_file(path_);
  auto loader = make_weight_loader({.mapped_writes = MappedWrites::per_call});
  auto b = loader->load_tensor(
      {.name = "b", .source = WeightSource::memory({.bytes = std::as_bytes(std::span(bytes))})});
  EXPECT_EQ(b->data(), std::as_bytes(std::span(bytes)).data() + (bytes.size() - 4 * 4096));
  EXPECT_FALSE(b->storage()->writable());
  EXPECT_EQ(b->as<float>()[100], 2.0f);
}

}  // namespace
}  // namespace ballast::test
