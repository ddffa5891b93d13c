// The exchange of a round with shards (see shard_exchange.hpp).
#include "distributed/shard_exchange.hpp"

#include <algorithm>

#include "ballast/tensor_parallel.hpp"

namespace ballast::distributed {
namespace {

constexpr uint64_t kAlignment = 64;  // as the round buffer's

uint64_t align_up(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

// A move from a reader's part (`from`) to a receiver's buffer (`to`).
using Move = Exchange::Move;

int shard_dim(const ShardDims& dims, const std::string& name) {
  auto found = dims.find(name);
  return found == dims.end() ? -1 : found->second;
}

uint64_t product(const std::vector<int64_t>& shape, size_t begin, size_t end) {
  uint64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= static_cast<uint64_t>(shape[i]);
  return n;
}

// Appends the move, merged into the previous one when both sides continue it.
void add(std::vector<Move>& out, Move m) {
  if (m.nbytes == 0) return;
  if (!out.empty() && out.back().from + out.back().nbytes == m.from &&
      out.back().to + out.back().nbytes == m.to) {
    out.back().nbytes += m.nbytes;
    return;
  }
  out.push_back(m);
}

// What `reader`'s pieces give `receiver` (whose buffer is `layout`), in ascending order.
std::vector<Move> moves(const Round& round, const ShardDims& dims, const Layout& layout, int reader,
                        int receiver, int world) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < round.tensors.size(); ++i) index.emplace(round.tensors[i].name, i);
  const auto k = static_cast<size_t>(reader);
  std::vector<Move> out;
  for (const Piece& piece : round.pieces[k]) {
    const size_t i = index.at(piece.tensor);
    const PlannedTensor& t = round.tensors[i];
    const uint64_t from = piece.offset - round.part_offsets[k];
    const uint64_t to = layout.offsets[i];
    const int d = shard_dim(dims, t.name);
    if (d < 0) {
      add(out, {from, to + (piece.offset - t.offset), piece.nbytes});
      continue;
    }
    const std::vector<int64_t>& shape = t.info.shape;
    const auto rows = static_cast<uint64_t>(shape[0]);
    const uint64_t row = t.info.nbytes / rows;
    const uint64_t first = piece.whole ? 0 : static_cast<uint64_t>(piece.first_row);
    const uint64_t end = piece.whole ? rows : static_cast<uint64_t>(piece.end_row);
    const ChunkRange c = chunk_range(shape[static_cast<size_t>(d)], receiver, world);
    const auto c0 = static_cast<uint64_t>(c.start), c1 = static_cast<uint64_t>(c.end);
    if (d == 0) {
      const uint64_t lo = std::max(first, c0), hi = std::min(end, c1);
      if (lo < hi) add(out, {from + (lo - first) * row, to + (lo - c0) * row, (hi - lo) * row});
      continue;
    }
    // Each row of dimension 0 holds `outer` runs of dimension d, each `extent` x `inner` bytes.
    const auto dd = static_cast<size_t>(d);
    const uint64_t outer = product(shape, 1, dd);
    const auto extent = static_cast<uint64_t>(shape[dd]);
    const uint64_t inner = row / outer / extent;
    const uint64_t kept = (c1 - c0) * inner;
    for (uint64_t r = first; r < end; ++r)
      for (uint64_t o = 0; o < outer; ++o)
        add(out, {from + (r - first) * row + (o * extent + c0) * inner, to + (r * outer + o) * kept,
                  kept});
  }
  return out;
}

}  // namespace

Layout layout_of(const Round& round, const ShardDims& dims, int rank, int world) {
  Layout layout;
  for (const PlannedTensor& t : round.tensors) {
    std::vector<int64_t> shape = t.info.shape;
    uint64_t nbytes = t.info.nbytes;
    const int d = shard_dim(dims, t.name);
    if (d >= 0) {
      const auto dd = static_cast<size_t>(d);
      const ChunkRange c = chunk_range(shape[dd], rank, world);
      const uint64_t per_index = shape[dd] == 0 ? 0 : nbytes / static_cast<uint64_t>(shape[dd]);
      shape[dd] = c.end - c.start;
      nbytes = per_index * static_cast<uint64_t>(shape[dd]);
    }
    const uint64_t at = align_up(layout.nbytes);
    layout.shapes.push_back(std::move(shape));
    layout.offsets.push_back(at);
    layout.sizes.push_back(nbytes);
    layout.nbytes = at + nbytes;
  }
  return layout;
}

Exchange plan_exchange(const Round& round, const ShardDims& dims, int rank, int world) {
  Exchange ex;
  const auto n = static_cast<size_t>(world);
  ex.send_counts.resize(n);
  ex.send_displacements.resize(n);
  ex.recv_counts.resize(n);
  ex.recv_displacements.resize(n);
  ex.mine = layout_of(round, dims, rank, world);
  for (int r = 0; r < world; ++r) {
    const auto rr = static_cast<size_t>(r);
    // This rank's block for rank r: r's buffer from the first byte it sends to the last.
    const std::vector<Move> out =
        moves(round, dims, layout_of(round, dims, r, world), rank, r, world);
    ex.send_displacements[rr] = ex.send_bytes;
    if (!out.empty()) {
      const uint64_t base = out.front().to;
      for (const Move& m : out)
        ex.packing.push_back({m.from, ex.send_bytes + (m.to - base), m.nbytes});
      ex.send_counts[rr] = out.back().to + out.back().nbytes - base;
      ex.send_bytes += ex.send_counts[rr];
    }
    // Rank r's block for this rank, where it lands.
    const std::vector<Move> in = moves(round, dims, ex.mine, r, rank, world);
    if (!in.empty()) {
      ex.recv_displacements[rr] = in.front().to;
      ex.recv_counts[rr] = in.back().to + in.back().nbytes - in.front().to;
    }
  }
  return ex;
}

}  // namespace ballast::distributed
