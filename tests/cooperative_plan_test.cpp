// The plan of a cooperative load (src/distributed/cooperative_plan): every stored byte is read
// by exactly one rank, parts are near-equal with cuts on row boundaries, tensors of block
// dtypes and 0-d tensors stay whole, rounds stay within their budget, and a name the
// checkpoint lacks is refused.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "ballast/error.hpp"
#include "distributed/cooperative_plan.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using distributed::make_plan;
using distributed::Piece;
using distributed::Plan;

WeightMetadata metadata(const std::map<std::string, TensorInfo>& tensors) {
  WeightMetadata meta;
  meta.tensors = tensors;
  return meta;
}

std::set<std::string> names_of(const WeightMetadata& meta) {
  std::set<std::string> out;
  for (const auto& [name, info] : meta.tensors) out.insert(name);
  return out;
}

// Every byte of every tensor, per tensor, is covered once by the pieces of all ranks.
void expect_exact_cover(const Plan& plan, const WeightMetadata& meta) {
  std::map<std::string, uint64_t> covered;
  for (const auto& round : plan.rounds) {
    uint64_t parts = 0;
    for (size_t r = 0; r < round.part_sizes.size(); ++r) {
      EXPECT_EQ(round.part_offsets[r], parts);
      parts += round.part_sizes[r];
      for (const Piece& p : round.pieces[r]) {
        EXPECT_GE(p.offset, round.part_offsets[r]);
        EXPECT_LE(p.offset + p.nbytes, round.part_offsets[r] + round.part_sizes[r]);
        covered[p.tensor] += p.nbytes;
      }
    }
    EXPECT_EQ(parts, round.nbytes);
  }
  for (const auto& [name, info] : meta.tensors) EXPECT_EQ(covered[name], info.nbytes) << name;
}

TEST(CooperativePlan, OneLargeTensorIsCutIntoNearEqualRowRanges) {
  const auto meta = metadata({{"w", {DType::f32, {1000, 256}, 1000 * 256 * 4}}});
  const Plan plan = make_plan(meta, names_of(meta), 4, 1 << 30);
  ASSERT_EQ(plan.rounds.size(), 1u);
  expect_exact_cover(plan, meta);
  for (int r = 0; r < 4; ++r) {
    const auto& pieces = plan.rounds[0].pieces[static_cast<size_t>(r)];
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_FALSE(pieces[0].whole);
    EXPECT_EQ(pieces[0].end_row - pieces[0].first_row, 250);
    EXPECT_EQ(pieces[0].nbytes, 250u * 1024);
  }
}

TEST(CooperativePlan, BlockDtypesAndScalarsStayWhole) {
  const auto meta = metadata({{"a.q8", {DType::q8_0, {64, 32}, 64 * 34}},
                              {"b.scalar", {DType::f32, {}, 4}},
                              {"c.q8", {DType::q8_0, {64, 32}, 64 * 34}}});
  const Plan plan = make_plan(meta, names_of(meta), 2, 1 << 30);
  expect_exact_cover(plan, meta);
  for (const auto& pieces : plan.rounds[0].pieces)
    for (const Piece& p : pieces) EXPECT_TRUE(p.whole) << p.tensor;
}

TEST(CooperativePlan, RoundsStayWithinTheirBudget) {
  std::map<std::string, TensorInfo> tensors;
  for (int i = 0; i < 10; ++i)
    tensors["t" + std::to_string(i)] = {DType::bf16, {100, 50}, 100 * 50 * 2};
  const auto meta = metadata(tensors);
  const Plan plan = make_plan(meta, names_of(meta), 3, 25000);
  EXPECT_EQ(plan.rounds.size(), 5u);  // two 10000-byte tensors (aligned) per round
  for (const auto& round : plan.rounds) EXPECT_LE(round.nbytes, 25000u);
  expect_exact_cover(plan, meta);
  EXPECT_EQ(plan.tensor_bytes, 10u * 10000);
}

TEST(CooperativePlan, MoreRanksThanRowsLeavesSomeRanksNothing) {
  const auto meta = metadata({{"w", {DType::f32, {2, 8}, 64}}});
  const Plan plan = make_plan(meta, names_of(meta), 4, 1 << 30);
  expect_exact_cover(plan, meta);
}

TEST(CooperativePlan, ANameTheCheckpointLacksIsRefused) {
  const auto meta = metadata({{"w", {DType::f32, {2}, 8}}});
  EXPECT_EQ(error_code_of(
                [&] {
                  make_plan(meta, {"w", "missing"}, 2, 1 << 20);
                },
                "not_found"),
            ErrorCode::not_found);
}

TEST(CooperativePlan, TheFingerprintFollowsTheInputs) {
  const auto a = metadata({{"w", {DType::f32, {4, 2}, 32}}});
  const auto b = metadata({{"w", {DType::f32, {2, 4}, 32}}});
  EXPECT_EQ(distributed::plan_fingerprint(make_plan(a, {"w"}, 2, 1 << 20)),
            distributed::plan_fingerprint(make_plan(a, {"w"}, 2, 1 << 20)));
  EXPECT_NE(distributed::plan_fingerprint(make_plan(a, {"w"}, 2, 1 << 20)),
            distributed::plan_fingerprint(make_plan(b, {"w"}, 2, 1 << 20)));
}

}  // namespace
}  // namespace ballast::test
