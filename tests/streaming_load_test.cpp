// Loader-level behaviour of the read engine: every read mode returns the same tensors (also
// cast and transposed, with staging budgets that force the unstaged paths), alignment up to
// 4096 is honoured, bad budgets are refused, tensors stream to a callback as they complete,
// and load_checkpoint loads every tensor matching glob patterns in one call.
#include <gtest/gtest.h>

#include <mutex>
#include <set>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

constexpr ReadMode kModes[] = {ReadMode::automatic, ReadMode::mmap, ReadMode::read,
                               ReadMode::io_uring, ReadMode::direct};

std::vector<float> iota_floats(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

class StreamingLoadTest : public testing::Test {
 protected:
  void SetUp() override {
    // A big tensor (several chunks at a 1 MiB chunk size) and many small ones.
    std::vector<StTensor> tensors = {
        {"big.weight", "F32", {512, 1024}, f32_bytes(iota_floats(512 * 1024, 0))}};
    for (int i = 0; i < 40; ++i)
      tensors.push_back({"layers." + std::to_string(i) + ".norm",
                         "F32",
                         {33},
                         f32_bytes(iota_floats(33, static_cast<float>(i)))});
    path_ = dir_ / "model.safetensors";
    write_file(path_, safetensors_file(tensors));
  }
  WeightSource source() const { return WeightSource::file(path_); }

  TempDir dir_;
  std::filesystem::path path_;
};

TEST_F(StreamingLoadTest, EveryReadModeGivesTheSameTensors) {
  const std::string want =
      sha256_hex(*make_weight_loader()->load_tensor({.name = "big.weight", .source = source()}));
  for (ReadMode mode : kModes) {
    SCOPED_TRACE(std::string(read_mode_name(mode)));
    auto loader =
        make_weight_loader({.read_mode = mode, .num_threads = 2, .read_chunk_bytes = 1 << 20});
    auto t = loader->load_tensor({.name = "big.weight", .source = source()});
    EXPECT_EQ(sha256_hex(*t), want);
    EXPECT_EQ(t->is_zero_copy(), mode == ReadMode::automatic || mode == ReadMode::mmap);
    auto small = loader->load_tensor({.name = "layers.7.norm", .source = source()});
    EXPECT_EQ(small->as<float>()[0], 7.0f);
  }
}

TEST_F(StreamingLoadTest, CastsAndTransposesAgreeAcrossModesAndBudgets) {
  auto reference = make_weight_loader({.read_mode = ReadMode::mmap});
  const TensorSpec cast{
      .name = "big.weight", .source = source(), .transformations = {Cast{DType::bf16}}};
  const TensorSpec transposed{
      .name = "big.weight", .source = source(), .transformations = {Transpose{0, 1}}};
  const std::string want_cast = sha256_hex(*reference->load_tensor(cast));
  const std::string want_transposed = sha256_hex(*reference->load_tensor(transposed));
  for (ReadMode mode : kModes)
    for (uint64_t staging : {uint64_t{8192}, uint64_t{64} << 20}) {
      SCOPED_TRACE(testing::Message() << read_mode_name(mode) << " staging " << staging);
      auto loader = make_weight_loader({.read_mode = mode,
                                        .num_threads = 2,
                                        .read_chunk_bytes = 1 << 20,
                                        .max_staging_bytes = staging});
      EXPECT_EQ(sha256_hex(*loader->load_tensor(cast)), want_cast);
      EXPECT_EQ(sha256_hex(*loader->load_tensor(transposed)), want_transposed);
    }
}

TEST_F(StreamingLoadTest, OwnedBuffersHonourTheAlignment) {
  for (size_t alignment : {16u, 64u, 512u, 4096u}) {
    auto loader = make_weight_loader({.read_mode = ReadMode::read, .alignment = alignment});
    for (const char* name : {"big.weight", "layers.3.norm"}) {
      auto t = loader->load_tensor({.name = name, .source = source()});
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data()) % alignment, 0u) << name << " " << alignment;
    }
  }
  for (size_t bad : {8u, 48u, 8192u})
    EXPECT_THROW(make_weight_loader({.alignment = bad}), Error) << bad;
}

TEST_F(StreamingLoadTest, RefusesBudgetsTooSmallForItsThreads) {
  EXPECT_THROW(make_weight_loader({.num_threads = 4, .max_staging_bytes = 4096}), Error);
  EXPECT_THROW(make_weight_loader({.read_chunk_bytes = 0}), Error);
  EXPECT_NO_THROW(make_weight_loader({.num_threads = 1, .max_staging_bytes = 4096}));
}

TEST_F(StreamingLoadTest, StreamingDeliversEveryTensorOnce) {
  for (ReadMode mode : {ReadMode::read, ReadMode::automatic}) {
    auto loader = make_weight_loader({.read_mode = mode, .num_threads = 3});
    std::vector<TensorSpec> specs;
    for (int i = 0; i < 40; ++i)
      specs.push_back({.name = "layers." + std::to_string(i) + ".norm", .source = source()});
    specs.push_back({.name = "big.weight", .source = source()});
    std::multiset<std::string> seen;
    int concurrent = 0, most = 0;
    std::mutex mutex;
    loader->load_tensors_streaming(specs, [&](const std::string& name, TensorRef t) {
      std::unique_lock lock(mutex, std::try_to_lock);
      ASSERT_TRUE(lock.owns_lock()) << "callbacks overlap";
      most = std::max(most, ++concurrent);
      EXPECT_EQ(t->name(), name);
      seen.insert(name);
      --concurrent;
    });
    EXPECT_EQ(seen.size(), specs.size());
    for (const auto& s : specs) EXPECT_EQ(seen.count(s.name), 1u) << s.name;
    EXPECT_EQ(most, 1);
  }
}

// With O_DIRECT a batch reads each file's plain tensors in one sweep; mixed with a cast (read
// on its own) and a second file, every tensor arrives once with exactly the mapped bytes.
TEST_F(StreamingLoadTest, DirectBatchesSweepEachFileAndDeliverEveryTensorOnce) {
  const auto second = dir_ / "second.safetensors";
  write_file(second, safetensors_file({{"extra", "F32", {3000}, f32_bytes(iota_floats(3000, 5))}}));
  std::vector<TensorSpec> specs;
  for (int i = 39; i >= 0; --i)
    specs.push_back({.name = "layers." + std::to_string(i) + ".norm", .source = source()});
  specs.push_back({.name = "big.weight", .source = source()});
  specs.push_back({.name = "extra", .source = WeightSource::file(second)});
  specs.push_back(
      {.name = "big.weight", .source = source(), .transformations = {Cast{DType::bf16}}});
  auto reference = make_weight_loader({.read_mode = ReadMode::mmap});
  std::vector<std::string> want;
  for (const auto& s : specs) want.push_back(sha256_hex(*reference->load_tensor(s)));
  for (uint64_t staging : {uint64_t{8192}, uint64_t{64} << 20}) {
    SCOPED_TRACE(testing::Message() << "staging " << staging);
    auto loader = make_weight_loader(
        {.read_mode = ReadMode::direct, .num_threads = 2, .max_staging_bytes = staging});
    std::mutex mutex;
    std::multiset<std::string> seen;
    loader->load_tensors_streaming(specs, [&](const std::string& name, TensorRef t) {
      std::lock_guard lock(mutex);
      seen.insert(name + "#" + sha256_hex(*t));
    });
    ASSERT_EQ(seen.size(), specs.size());
    for (size_t i = 0; i < specs.size(); ++i)
      EXPECT_EQ(seen.count(specs[i].name + "#" + want[i]), 1u) << specs[i].name;
    const auto batch = loader->load_tensors(specs);
    for (size_t i = 0; i < specs.size(); ++i) EXPECT_EQ(sha256_hex(*batch[i]), want[i]);
  }
}

TEST_F(StreamingLoadTest, StreamingReportsTheFirstFailure) {
  auto loader = make_weight_loader({.num_threads = 2});
  std::vector<TensorSpec> specs = {{.name = "layers.1.norm", .source = source()},
                                   {.name = "missing", .source = source()}};
  try {
    loader->load_tensors_streaming(specs, [](const std::string&, TensorRef) {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::not_found);
  }
  // A throwing callback fails the load too.
  EXPECT_THROW(loader->load_tensors_streaming({{.name = "layers.1.norm", .source = source()}},
                                              [](const std::string&, TensorRef) {
                                                throw Error(ErrorCode::cancelled, "stop");
                                              }),
               Error);
  std::vector<TensorSpec> none;
  EXPECT_NO_THROW(loader->load_tensors_streaming(none, [](const std::string&, TensorRef) {}));
}

TEST_F(StreamingLoadTest, LoadCheckpointSelectsByGlob) {
  auto loader = make_weight_loader({.read_mode = ReadMode::read});
  auto all = loader->load_checkpoint(source());
  EXPECT_EQ(all.size(), 41u);
  auto some = loader->load_checkpoint(source(), {"layers.1*.norm", "big.*"});
  std::set<std::string> names;
  for (const auto& [name, t] : some) names.insert(name);
  std::set<std::string> want = {"big.weight"};
  want.insert("layers.1.norm");
  for (int i = 10; i < 20; ++i) want.insert("layers." + std::to_string(i) + ".norm");
  EXPECT_EQ(names, want);
  auto cast = loader->load_checkpoint(source(), {"layers.2.norm"}, {Cast{DType::f16}});
  EXPECT_EQ(cast.at("layers.2.norm")->dtype(), DType::f16);
  EXPECT_THROW(loader->load_checkpoint(source(), {"nothing.*"}), Error);
}

}  // namespace
}  // namespace ballast::test
