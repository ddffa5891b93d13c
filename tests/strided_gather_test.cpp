// StridedGather against a naive element-by-element reference: permuted, sliced and offset views
// of rank 1 to 4, every element size a view can have, and windows that start and end inside
// rows, so the tiled path, the run path and their seams are all covered.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "ballast/byte_source.hpp"
#include "loader/strided_gather.hpp"

namespace ballast {
namespace {

DType dtype_of_size(size_t size) {
  switch (size) {
    case 1: return DType::u8;
    case 2: return DType::f16;
    case 4: return DType::f32;
    case 8: return DType::f64;
    default: return DType::c128;
  }
}

// The view of a row-major tensor `full` (elements) with dims permuted by `order`, each output
// dim d limited to `extent[d]` elements starting at `start[d]`.
View permuted_view(const Shape& full, const std::vector<size_t>& order, const Shape& start,
                   const Shape& extent, size_t element_size, uint64_t base_offset) {
  std::vector<int64_t> row_major(full.size(), 1);
  for (size_t d = full.size() - 1; d-- > 0;) row_major[d] = row_major[d + 1] * full[d + 1];
  View v;
  v.dtype = dtype_of_size(element_size);
  v.offset = base_offset;
  for (size_t d = 0; d < order.size(); ++d) {
    v.shape.push_back(extent[d]);
    v.strides.push_back(row_major[order[d]]);
    v.offset += static_cast<uint64_t>(start[d] * row_major[order[d]]) * element_size;
  }
  return v;
}

std::vector<std::byte> naive(const View& v, const std::vector<std::byte>& memory) {
  const size_t size = dtype_element_size(v.dtype);
  std::vector<std::byte> out;
  std::vector<int64_t> index(v.shape.size(), 0);
  const uint64_t n = v.numel();
  for (uint64_t e = 0; e < n; ++e) {
    int64_t element = 0;
    for (size_t d = 0; d < v.shape.size(); ++d) element += index[d] * v.strides[d];
    const auto* p = memory.data() + v.offset + static_cast<uint64_t>(element) * size;
    out.insert(out.end(), p, p + size);
    for (size_t d = v.shape.size(); d-- > 0;) {
      if (++index[d] < v.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

TEST(StridedGather, MatchesElementByElementCopies) {
  std::mt19937 rng(5);
  int checked = 0;
  for (size_t size : {1, 2, 4, 8, 16})
    for (size_t rank = 1; rank <= 4; ++rank)
      for (int trial = 0; trial < 6; ++trial) {
        Shape full(rank);
        for (auto& x : full) x = 1 + static_cast<int64_t>(rng() % (rank <= 2 ? 70 : 9));
        std::vector<size_t> order(rank);
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        if (trial == 0 && rank >= 2) std::swap(order[rank - 1], order[rank - 2]);
        Shape start(rank), extent(rank);
        for (size_t d = 0; d < rank; ++d) {
          const int64_t dim = full[order[d]];
          start[d] = static_cast<int64_t>(rng() % static_cast<uint64_t>(dim));
          extent[d] = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(dim - start[d]));
        }
        const uint64_t offset = 3 + rng() % 5;  // unaligned on purpose
        uint64_t numel = 1;
        for (auto x : full) numel *= static_cast<uint64_t>(x);
        std::vector<std::byte> memory(offset + numel * size);
        for (auto& b : memory) b = static_cast<std::byte>(rng());
        View view = permuted_view(full, order, start, extent, size, offset);
        view.data = make_memory_source(std::span<const std::byte>(memory), nullptr, "m");
        const auto want = naive(view, memory);
        StridedGather gather(view, memory.data());
        const uint64_t n = view.numel();
        std::vector<std::byte> got(n * size);
        gather.gather(0, n, got.data());
        EXPECT_EQ(got, want) << "size " << size << " rank " << rank << " trial " << trial;
        // Windows that start and stop inside rows.
        for (int w = 0; w < 4; ++w) {
          const uint64_t first = rng() % n;
          const uint64_t count = rng() % (n - first + 1);
          std::vector<std::byte> part(count * size);
          gather.gather(first, count, part.data());
          EXPECT_TRUE(std::equal(part.begin(), part.end(), want.begin() + first * size))
              << "size " << size << " rank " << rank << " window " << first << "+" << count;
        }
        ++checked;
      }
  EXPECT_EQ(checked, 5 * 4 * 6);
}

}  // namespace
}  // namespace ballast
