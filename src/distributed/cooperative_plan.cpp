// The deterministic plan of a cooperative load (see cooperative_plan.hpp).
#include "distributed/cooperative_plan.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ballast/error.hpp"
#include "ballast/hash.hpp"

namespace ballast::distributed {
namespace {

constexpr uint64_t kAlignment = 64;  // every tensor of a round buffer starts aligned

uint64_t align_up(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

// Bytes of one row of dimension 0 when the tensor may be split between rows, else 0.
uint64_t row_bytes(const TensorInfo& info) {
  if (dtype_element_size(info.dtype) == 0 || info.shape.empty() || info.shape[0] < 2) return 0;
  const auto rows = static_cast<uint64_t>(info.shape[0]);
  return info.nbytes % rows == 0 ? info.nbytes / rows : 0;
}

// target * k / world without overflow.
uint64_t share_end(uint64_t total, int k, int world) {
  const auto w = static_cast<uint64_t>(world);
  const auto kk = static_cast<uint64_t>(k);
  return total / w * kk + total % w * kk / w;
}

// The row boundary (or, for a tensor that is not split, the tensor boundary) nearest `target`.
uint64_t cut_near(const Round& round, uint64_t target) {
  const auto& ts = round.tensors;
  auto it = std::upper_bound(ts.begin(), ts.end(), target,
                             [](uint64_t t, const PlannedTensor& p) { return t < p.offset; });
  if (it == ts.begin()) return 0;
  const PlannedTensor& t = *std::prev(it);
  const uint64_t into = std::min(target - t.offset, t.info.nbytes);
  const uint64_t row = row_bytes(t.info);
  if (row == 0) return t.offset + (into * 2 < t.info.nbytes ? 0 : t.info.nbytes);
  return t.offset + (into + row / 2) / row * row;
}

std::vector<Piece> pieces_in(const Round& round, uint64_t begin, uint64_t end) {
  std::vector<Piece> out;
  for (const PlannedTensor& t : round.tensors) {
    const uint64_t lo = std::max(begin, t.offset);
    const uint64_t hi = std::min(end, t.offset + t.info.nbytes);
    if (lo >= hi) continue;
    Piece piece{.tensor = t.name, .offset = lo, .nbytes = hi - lo};
    piece.whole = lo == t.offset && hi == t.offset + t.info.nbytes;
    if (!piece.whole) {
      const uint64_t row = row_bytes(t.info);
      piece.first_row = static_cast<int64_t>((lo - t.offset) / row);
      piece.end_row = static_cast<int64_t>((hi - t.offset) / row);
    }
    out.push_back(std::move(piece));
  }
  return out;
}

void cut_into_parts(Round& round, int world) {
  std::vector<uint64_t> cuts{0};
  for (int k = 1; k < world; ++k)
    cuts.push_back(std::max(cuts.back(), cut_near(round, share_end(round.nbytes, k, world))));
  cuts.push_back(round.nbytes);
  for (int k = 0; k < world; ++k) {
    const uint64_t begin = cuts[static_cast<size_t>(k)];
    const uint64_t end = cuts[static_cast<size_t>(k) + 1];
    round.part_offsets.push_back(begin);
    round.part_sizes.push_back(end - begin);
    round.pieces.push_back(pieces_in(round, begin, end));
  }
}

}  // namespace

Plan make_plan(const WeightMetadata& meta, const std::set<std::string>& names, int world,
               uint64_t round_bytes) {
  if (world < 1) throw Error(ErrorCode::invalid_argument, "a cooperative load needs a world of 1+");
  Plan plan;
  Round round;
  for (const std::string& name : names) {  // a std::set: the same order on every rank
    auto found = meta.tensors.find(name);
    if (found == meta.tensors.end())
      throw Error(ErrorCode::not_found, fmt::format("no tensor '{}' in the checkpoint", name));
    const TensorInfo& info = found->second;
    const uint64_t offset = align_up(round.nbytes);
    if (!round.tensors.empty() && offset + info.nbytes > round_bytes) {
      plan.rounds.push_back(std::move(round));
      round = Round{};
    }
    const uint64_t at = align_up(round.nbytes);
    round.tensors.push_back({.name = name, .info = info, .offset = at});
    round.nbytes = at + info.nbytes;
    plan.tensor_bytes += info.nbytes;
  }
  if (!round.tensors.empty()) plan.rounds.push_back(std::move(round));
  for (Round& r : plan.rounds) cut_into_parts(r, world);
  return plan;
}

int64_t plan_fingerprint(const Plan& plan) {
  std::string text;
  for (const Round& r : plan.rounds)
    for (const PlannedTensor& t : r.tensors)
      text += fmt::format("{}|{}|{}|{};", t.name, dtype_name(t.info.dtype),
                          fmt::join(t.info.shape, ","), t.info.nbytes);
  const std::string digest = sha256_hex(std::as_bytes(std::span(text)));
  return static_cast<int64_t>(std::stoull(digest.substr(0, 15), nullptr, 16));
}

}  // namespace ballast::distributed
