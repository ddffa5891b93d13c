// Coalesced reads of small tensors: the grouping rules, and loads over real HTTP (nginx on
// 127.0.0.1, caching off) where hundreds of small tensors cost a few ranged GETs, counted in
// nginx's access log, with every byte equal to the local file's. O_DIRECT loads, which also
// coalesce, are checked against read mode.
#include "loader/coalesced_reads.hpp"

#include <gtest/gtest.h>

#include "ballast/ballast.hpp"
#include "support/nginx_server.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

std::vector<std::pair<size_t, size_t>> runs_of(std::vector<SmallRead> reads,
                                               CoalesceLimits limits = {}) {
  return coalesce_runs(reads, limits);
}

TEST(CoalesceRuns, NeighboursJoinAndFarOnesDoNot) {
  const auto* a = reinterpret_cast<const ByteSource*>(0x1000);
  CoalesceLimits limits{.max_tensor_bytes = 100, .max_gap_bytes = 10, .max_span_bytes = 1000};
  // Out of order on input; sorted by offset: 0-100, 100-150, 160-200 (gap 10), 300-350 (gap 100).
  std::vector<SmallRead> reads{{0, a, 160, 40}, {1, a, 0, 100}, {2, a, 300, 50}, {3, a, 100, 50}};
  auto runs = coalesce_runs(reads, limits);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0], (std::pair<size_t, size_t>{0, 3}));
  EXPECT_EQ(reads[0].index, 1u);
  EXPECT_EQ(reads[2].index, 0u);
  EXPECT_EQ(runs[1], (std::pair<size_t, size_t>{3, 4}));
}

TEST(CoalesceRuns, SpanSourceAndSizeLimitsSplitRuns) {
  const auto* a = reinterpret_cast<const ByteSource*>(0x1000);
  const auto* b = reinterpret_cast<const ByteSource*>(0x2000);
  CoalesceLimits limits{.max_tensor_bytes = 100, .max_gap_bytes = 10, .max_span_bytes = 250};
  // Span: 0-100 and 100-200 fit in 250; 200-300 would make 300.
  EXPECT_EQ(runs_of({{0, a, 0, 100}, {1, a, 100, 100}, {2, a, 200, 100}}, limits).size(), 2u);
  // Another source never joins.
  EXPECT_EQ(runs_of({{0, a, 0, 10}, {1, b, 10, 10}}, limits).size(), 2u);
  // A large read is a run of its own, and the neighbours around it are separate runs.
  auto runs = runs_of({{0, a, 0, 10}, {1, a, 10, 101}, {2, a, 111, 10}}, limits);
  EXPECT_EQ(runs.size(), 3u);
  // Overlapping reads (one storage shared by two tensors) join.
  EXPECT_EQ(runs_of({{0, a, 0, 50}, {1, a, 20, 50}}, limits).size(), 1u);
  EXPECT_TRUE(runs_of({}, limits).empty());
}

NginxServer& server() { return process_wide<NginxServer>(); }

// 300 small tensors of distinct bytes (4 KiB each), then one 2 MiB tensor.
std::vector<StTensor> small_tensors() {
  std::vector<StTensor> tensors;
  for (int i = 0; i < 300; ++i) {
    std::string bytes(4096, '\0');
    for (size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<char>(i * 31 + k * 7);
    tensors.push_back({"norm." + std::to_string(i), "U8", {4096}, bytes});
  }
  tensors.push_back({"embed", "U8", {2 << 20}, std::string(2 << 20, 'e')});
  return tensors;
}

class CoalescedLoad : public testing::Test {
 protected:
  void SetUp() override {
    BALLAST_REQUIRE_NGINX(server());
    write_file(server().files() / "small.safetensors", safetensors_file(small_tensors()));
    local_ = WeightSource::file(server().files() / "small.safetensors");
    remote_ = WeightSource::url(server().url("files/small.safetensors"));
  }

  static WeightLoaderConfig remote_config() {
    WeightLoaderConfig config;
    config.enable_caching = false;
    config.num_threads = 2;
    return config;
  }

  std::vector<TensorSpec> specs(const WeightSource& source, int step = 1) const {
    std::vector<TensorSpec> out;
    for (int i = 0; i < 300; i += step)
      out.push_back({.name = "norm." + std::to_string(i), .source = source});
    out.push_back({.name = "embed", .source = source});
    return out;
  }

  // GET requests since the metadata was read.
  size_t gets_for(const std::function<std::vector<TensorRef>(WeightLoader&)>& load,
                  std::vector<TensorRef>& out) {
    auto loader = make_weight_loader(remote_config());
    loader->get_metadata(remote_);
    server().settled_body_bytes();
    server().clear_log();
    out = load(*loader);
    server().settled_body_bytes();
    size_t gets = 0;
    for (const auto& r : server().requests()) gets += r.method == "GET";
    return gets;
  }

  void expect_same_bytes(const std::vector<TensorRef>& got, int step) {
    auto expected =
        make_weight_loader({.read_mode = ReadMode::read})->load_tensors(specs(local_, step));
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(got[i]) << i;
      EXPECT_EQ(got[i]->name(), expected[i]->name());
      EXPECT_EQ(sha256_hex(*got[i]), sha256_hex(*expected[i])) << got[i]->name();
      EXPECT_EQ(reinterpret_cast<uintptr_t>(got[i]->data()) % 64, 0u) << got[i]->name();
    }
  }

  WeightSource local_, remote_;
};

TEST_F(CoalescedLoad, HundredsOfSmallTensorsOverHttpTakeAFewRequests) {
  std::vector<TensorRef> got;
  const size_t gets =
      gets_for([&](WeightLoader& l) { return l.load_tensors(specs(remote_)); }, got);
  // 300 small tensors (1.2 MiB: one run, one GET) and one 2 MiB tensor (one GET).
  EXPECT_EQ(gets, 2u) << "one GET per small tensor would be 301";
  expect_same_bytes(got, 1);
}

TEST_F(CoalescedLoad, GapsBetweenRequestedTensorsAreReadAndDropped) {
  std::vector<TensorRef> got;
  const size_t gets =
      gets_for([&](WeightLoader& l) { return l.load_tensors(specs(remote_, 3)); }, got);
  EXPECT_EQ(gets, 2u);
  expect_same_bytes(got, 3);
}

TEST_F(CoalescedLoad, StreamingCoalescesToo) {
  std::vector<TensorRef> got;
  const size_t gets = gets_for(
      [&](WeightLoader& l) {
        auto all = specs(remote_);
        std::map<std::string, size_t> slot;
        for (size_t i = 0; i < all.size(); ++i) slot[all[i].name] = i;
        std::vector<TensorRef> out(all.size());
        l.load_tensors_streaming(all, [&](const std::string& name, TensorRef t) {
          EXPECT_FALSE(out[slot.at(name)]) << name << " delivered twice";
          out[slot.at(name)] = std::move(t);
        });
        return out;
      },
      got);
  EXPECT_EQ(gets, 2u);
  expect_same_bytes(got, 1);
}

TEST_F(CoalescedLoad, DirectModeGivesTheSameBytes) {
  WeightLoaderConfig config{.read_mode = ReadMode::direct, .num_threads = 2};
  expect_same_bytes(make_weight_loader(config)->load_tensors(specs(local_, 2)), 2);
}

TEST_F(CoalescedLoad, AMissingTensorFailsTheBatchBeforeAnyRead) {
  auto all = specs(remote_);
  all.push_back({.name = "no.such.tensor", .source = remote_});
  auto loader = make_weight_loader(remote_config());
  loader->get_metadata(remote_);
  server().settled_body_bytes();
  server().clear_log();
  try {
    loader->load_tensors(all);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::not_found) << e.what();
    EXPECT_NE(std::string(e.what()).find("no.such.tensor"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server().settled_body_bytes(), 0u) << "tensors were read before the batch failed";
}

}  // namespace
}  // namespace ballast::test
