// make_arena_tensor_factory: a load places every host tensor inside the caller's block, aligned and
// without overlaps, with the same bytes as an ordinary load; a block too small fails with
// limit_exceeded naming the tensor; the block's owner lives as long as the tensors do.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

// 40 tensors of assorted sizes (some small enough to be read in coalesced runs).
std::string checkpoint_bytes() {
  std::vector<StTensor> tensors;
  for (int i = 0; i < 40; ++i) {
    const int64_t n = 1 + (i * 977) % 5000;
    std::vector<float> values(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) values[static_cast<size_t>(k)] = float(i * 10000 + k);
    tensors.push_back({"t" + std::to_string(i), "F32", {n}, f32_bytes(values)});
  }
  return safetensors_file(tensors);
}

WeightLoaderConfig config_with(std::shared_ptr<TensorFactory> arena, ReadMode mode) {
  WeightLoaderConfig config;
  config.read_mode = mode;
  config.num_threads = 4;
  config.factories = {std::move(arena)};
  return config;
}

uintptr_t address(const std::byte* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(ArenaFactory, TensorsLandInTheBlockAlignedDisjointAndExact) {
  TempDir dir;
  const auto path = dir / "m.safetensors";
  write_file(path, checkpoint_bytes());
  const auto expected = make_weight_loader()->load_checkpoint(WeightSource::file(path));
  for (ReadMode mode : {ReadMode::read, ReadMode::direct, ReadMode::mmap}) {
    std::vector<std::byte> block(1 << 20);
    const uint64_t begin = address(block.data()), end = begin + block.size();
    auto loader = make_weight_loader(config_with(make_arena_tensor_factory(block), mode));
    const auto loaded = loader->load_checkpoint(WeightSource::file(path));
    ASSERT_EQ(loaded.size(), expected.size());
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (const auto& [name, tensor] : loaded) {
      const Tensor& want = *expected.at(name);
      ASSERT_EQ(tensor->nbytes(), want.nbytes()) << name;
      EXPECT_EQ(std::memcmp(tensor->data(), want.data(), want.nbytes()), 0) << name;
      if (mode == ReadMode::mmap) continue;  // mapped tensors are zero-copy, not placed
      const uint64_t at = address(tensor->data());
      EXPECT_EQ(tensor->storage()->kind(), StorageKind::caller_memory) << name;
      EXPECT_EQ(at % 64, 0u) << name;
      EXPECT_GE(at, begin) << name;
      EXPECT_LE(at + tensor->nbytes(), end) << name;
      ranges.emplace_back(at, at + tensor->nbytes());
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i)
      EXPECT_LE(ranges[i - 1].second, ranges[i].first) << "overlap, mode " << read_mode_name(mode);
  }
}

TEST(ArenaFactory, ABlockTooSmallFailsNamingTheTensor) {
  TempDir dir;
  const auto path = dir / "m.safetensors";
  write_file(path, checkpoint_bytes());
  std::vector<std::byte> block(4096);
  auto loader = make_weight_loader(config_with(make_arena_tensor_factory(block), ReadMode::read));
  try {
    loader->load_checkpoint(WeightSource::file(path));
    FAIL() << "40 tensors fitted in 4 KiB";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::limit_exceeded) << e.what();
    EXPECT_FALSE(e.context().tensor.empty()) << e.what();
    EXPECT_NE(e.message().find("arena"), std::string::npos) << e.what();
  }
}

TEST(ArenaFactory, TheOwnerLivesAsLongAsTheTensors) {
  TempDir dir;
  const auto path = dir / "m.safetensors";
  write_file(path, checkpoint_bytes());
  auto block = std::make_shared<std::vector<std::byte>>(1 << 20);
  std::weak_ptr<std::vector<std::byte>> watch = block;
  auto arena = make_arena_tensor_factory(*block, block);
  block.reset();
  std::map<std::string, TensorRef> loaded;
  {
    auto loader = make_weight_loader(config_with(std::move(arena), ReadMode::read));
    loaded = loader->load_checkpoint(WeightSource::file(path));
  }
  EXPECT_FALSE(watch.expired()) << "the tensors must keep the block alive";
  const float first = *reinterpret_cast<const float*>(loaded.at("t1")->data());
  EXPECT_EQ(first, 10000.0f);
  loaded.clear();
  EXPECT_TRUE(watch.expired()) << "the last tensor must release the block";
}

}  // namespace
}  // namespace ballast::test
