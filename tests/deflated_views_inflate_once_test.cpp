// A deflated torch storage with many views is inflated once per load, whatever the order the
// views are read in and in every read mode (issue 37). The inflater once restarted its stream
// from the member's start for each view read behind it: views of more than 1 MiB each (read
// straight into their tensors in read, io_uring and direct modes) read last to first cost a
// whole inflation each. Counted with inflation_passes_started(), not timed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ballast/ballast.hpp"
#include "formats/zip/inflated_source.hpp"
#include "support/test_support.hpp"
#include "support/torch_pickle_builder.hpp"

namespace ballast::test {
namespace {

constexpr int64_t kViews = 6;
constexpr int64_t kViewFloats = (1 << 18) + 4096;  // 1 MiB + 16 KiB: past what is kept
constexpr uint64_t kViewBytes = kViewFloats * 4;

constexpr ReadMode kModes[] = {ReadMode::automatic, ReadMode::mmap, ReadMode::read,
                               ReadMode::io_uring, ReadMode::direct};

std::string view_name(int64_t i) { return "v" + std::to_string(i); }

// {"v<i>": the i-th kViewFloats of one deflated storage "0"} for i < kViews.
class DeflatedViews : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    storage_ = pattern_bytes(kViews * kViewBytes, 37);
    PickleBuilder p;
    p.proto(2).op('}').mark();
    for (int64_t i = 0; i < kViews; ++i)
      p.str(view_name(i))
          .tensor("FloatStorage", "0", kViews * kViewFloats, i * kViewFloats, {kViewFloats}, {1});
    const std::string pickle = p.op('u').stop().bytes();
    write_file(*dir_ / "views.pt", torch_zip_file(pickle, {{"0", storage_}}, "archive", true));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static TensorSpec spec(int64_t i) {
    return {.name = view_name(i), .source = WeightSource::file(*dir_ / "views.pt")};
  }

  static void expect_view(const TensorRef& t, int64_t i) {
    ASSERT_EQ(t->nbytes(), kViewBytes);
    EXPECT_EQ(std::memcmp(t->data(), storage_.data() + i * kViewBytes, kViewBytes), 0)
        << view_name(i);
  }

  static inline TempDir* dir_ = nullptr;
  static inline std::string storage_;
};

TEST_F(DeflatedViews, OneBatchOfViewsInAnyOrderInflatesTheMemberOnce) {
  const std::vector<std::vector<int64_t>> orders = {
      {5, 4, 3, 2, 1, 0}, {0, 5, 1, 4, 2, 3}, {2, 0, 4, 1, 5, 3}};
  for (ReadMode mode : kModes) {
    for (const auto& order : orders) {
      auto loader = make_weight_loader({.read_mode = mode, .num_threads = 2});
      std::vector<TensorSpec> specs;
      for (int64_t i : order) specs.push_back(spec(i));
      const uint64_t before = inflation_passes_started();
      const std::vector<TensorRef> tensors = loader->load_tensors(specs);
      EXPECT_EQ(inflation_passes_started() - before, 1u)
          << read_mode_name(mode) << ", views in order " << testing::PrintToString(order);
      for (size_t k = 0; k < order.size(); ++k) expect_view(tensors[k], order[k]);
    }
  }
}

TEST_F(DeflatedViews, ViewsLoadedOneByOneOutOfOrderInflateTheMemberAtMostTwice) {
  // Each load_tensor is a load of its own: the first that reads behind what was streamed past
  // inflates the member again, keeping it; none after it inflates.
  const std::vector<std::vector<int64_t>> orders = {{5, 4, 3, 2, 1, 0}, {0, 5, 1, 4, 2, 3}};
  for (ReadMode mode : kModes) {
    for (const auto& order : orders) {
      auto loader = make_weight_loader({.read_mode = mode, .num_threads = 2});
      const uint64_t before = inflation_passes_started();
      for (int64_t i : order) expect_view(loader->load_tensor(spec(i)), i);
      EXPECT_LE(inflation_passes_started() - before, 2u)
          << read_mode_name(mode) << ", views in order " << testing::PrintToString(order);
    }
  }
}

TEST_F(DeflatedViews, ViewsReadInOrderOneByOneInflateTheMemberOnce) {
  // In order, one view after the other, read mode streams the member once into the tensors.
  auto loader = make_weight_loader({.read_mode = ReadMode::read, .num_threads = 2});
  const uint64_t before = inflation_passes_started();
  for (int64_t i = 0; i < kViews; ++i) expect_view(loader->load_tensor(spec(i)), i);
  EXPECT_EQ(inflation_passes_started() - before, 1u);
}

}  // namespace
}  // namespace ballast::test
