// The exchange of shards (src/distributed/shard_exchange), run in one process: each rank's part
// of a round buffer is packed as plan_exchange says, the blocks are moved as alltoallv would
// move them, and every rank's receive buffer then holds exactly its torch.chunk of each sharded
// tensor (and the whole of the others), for rows, columns and an inner dimension, uneven
// chunks, more ranks than rows and tensors split between ranks; and it receives only that.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "ballast/tensor_parallel.hpp"
#include "distributed/shard_exchange.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using distributed::Exchange;
using distributed::Layout;
using distributed::Plan;
using distributed::ShardDims;

TensorInfo f32(std::vector<int64_t> shape) {
  uint64_t n = 4;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return {.dtype = DType::f32, .shape = std::move(shape), .nbytes = n};
}

// The bytes of rank `rank`'s chunk of `dim` of a row-major tensor of `shape` at `data`.
std::vector<std::byte> chunk_of(const std::byte* data, const std::vector<int64_t>& shape, int dim,
                                int rank, int world) {
  const auto d = static_cast<size_t>(dim);
  uint64_t outer = 1, inner = 4;
  for (size_t i = 0; i < d; ++i) outer *= static_cast<uint64_t>(shape[i]);
  for (size_t i = d + 1; i < shape.size(); ++i) inner *= static_cast<uint64_t>(shape[i]);
  const auto extent = static_cast<uint64_t>(shape[d]);
  const ChunkRange c = chunk_range(shape[d], rank, world);
  const uint64_t run = static_cast<uint64_t>(c.end - c.start) * inner;
  std::vector<std::byte> out;
  for (uint64_t o = 0; o < outer; ++o) {
    const std::byte* at = data + (o * extent + static_cast<uint64_t>(c.start)) * inner;
    out.insert(out.end(), at, at + run);
  }
  return out;
}

// Runs the exchange of every round among `world` ranks and checks each rank's buffer.
void expect_exchange(const std::map<std::string, TensorInfo>& tensors, const ShardDims& dims,
                     int world, uint64_t round_bytes = 1 << 20) {
  WeightMetadata meta;
  meta.tensors = tensors;
  std::set<std::string> names;
  for (const auto& [name, info] : tensors) names.insert(name);
  const Plan plan = distributed::make_plan(meta, names, world, round_bytes);
  for (const auto& round : plan.rounds) {
    // The round buffer as the checkpoint stores it: byte i of tensor t is (t, i) mixed.
    std::vector<std::byte> stored(round.nbytes);
    for (const auto& t : round.tensors)
      for (uint64_t i = 0; i < t.info.nbytes; ++i)
        stored[t.offset + i] = static_cast<std::byte>(i * 131 + t.name.size() * 7 + i / 251);
    std::vector<Exchange> ex;
    std::vector<std::vector<std::byte>> sends, recvs;
    for (int r = 0; r < world; ++r) {
      const auto rr = static_cast<size_t>(r);
      ex.push_back(distributed::plan_exchange(round, dims, r, world));
      std::vector<std::byte> send(ex[rr].send_bytes);
      for (const auto& m : ex[rr].packing)
        std::copy_n(stored.begin() + static_cast<ptrdiff_t>(round.part_offsets[rr] + m.from),
                    m.nbytes, send.begin() + static_cast<ptrdiff_t>(m.to));
      sends.push_back(std::move(send));
      recvs.emplace_back(ex[rr].mine.nbytes);
    }
    for (size_t from = 0; from < ex.size(); ++from)
      for (size_t to = 0; to < ex.size(); ++to) {
        ASSERT_EQ(ex[from].send_counts[to], ex[to].recv_counts[from]) << from << " -> " << to;
        std::copy_n(sends[from].begin() + static_cast<ptrdiff_t>(ex[from].send_displacements[to]),
                    ex[from].send_counts[to],
                    recvs[to].begin() + static_cast<ptrdiff_t>(ex[to].recv_displacements[from]));
      }
    for (int r = 0; r < world; ++r) {
      const auto rr = static_cast<size_t>(r);
      const Layout& layout = ex[rr].mine;
      uint64_t kept = 0;
      for (size_t i = 0; i < round.tensors.size(); ++i) {
        const auto& t = round.tensors[i];
        auto found = dims.find(t.name);
        const std::byte* data = stored.data() + t.offset;
        const std::vector<std::byte> expected =
            found == dims.end() ? std::vector<std::byte>(data, data + t.info.nbytes)
                                : chunk_of(data, t.info.shape, found->second, r, world);
        ASSERT_EQ(layout.sizes[i], expected.size()) << t.name << " rank " << r;
        EXPECT_TRUE(std::equal(expected.begin(), expected.end(),
                               recvs[rr].begin() + static_cast<ptrdiff_t>(layout.offsets[i])))
            << t.name << " rank " << r << " of " << world;
        kept += expected.size();
      }
      // What came from the others is at most what the rank keeps.
      uint64_t received = 0;
      for (size_t k = 0; k < ex.size(); ++k)
        if (k != rr) received += ex[rr].recv_counts[k];
      EXPECT_LE(received, kept + 64 * round.tensors.size()) << "rank " << r;
    }
  }
}

const std::map<std::string, TensorInfo> kTensors = {
    {"a", f32({37, 10})}, {"b", f32({5, 6, 7})}, {"c", f32({64})}, {"d", f32({3, 2})}};

TEST(CooperativeExchange, RowShardsReachTheirRanks) {
  for (int world : {1, 2, 3, 4, 7})
    expect_exchange(kTensors, {{"a", 0}, {"b", 0}, {"c", 0}, {"d", 0}}, world);
}

TEST(CooperativeExchange, ColumnAndInnerShardsReachTheirRanks) {
  for (int world : {2, 3, 4, 7}) {
    expect_exchange(kTensors, {{"a", 1}, {"b", 1}, {"d", 1}}, world);
    expect_exchange(kTensors, {{"b", 2}}, world);
  }
}

TEST(CooperativeExchange, SmallRoundsAndWholeTensorsMix) {
  for (int world : {2, 4}) expect_exchange(kTensors, {{"a", 1}, {"c", 0}}, world, 600);
}

}  // namespace
}  // namespace ballast::test
