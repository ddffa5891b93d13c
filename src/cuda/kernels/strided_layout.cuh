// The index math of launch_strided_copy and launch_strided_scatter: a strided view reduced to
// its fewest dimensions (extent-1 dimensions dropped, neighbours that step through memory as
// one dimension merged), and the element offset of the k-th element in row-major order; for a
// scatter, the same for the source and destination strides together. Shared by the kernels,
// the host device backend and tests/cuda_kernels_math_test.cpp (see element_math.cuh).
#pragma once

#include <cstdint>
#include <span>

#include "cuda/device_kernels.hpp"
#include "cuda/kernels/element_math.cuh"

namespace ballast::cuda {

struct StridedLayout {
  int rank = 0;  // 0 when the view is one element (offset 0)
  int64_t shape[kMaxStridedRank] = {};
  int64_t strides[kMaxStridedRank] = {};  // elements
};

// shape and strides have the same rank, at most kMaxStridedRank, and no zero extent.
inline StridedLayout simplify_layout(std::span<const int64_t> shape,
                                     std::span<const int64_t> strides) {
  StridedLayout out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const int r = out.rank;
    if (r > 0 && out.strides[r - 1] == strides[d] * shape[d]) {  // outer steps over inner
      out.shape[r - 1] *= shape[d];
      out.strides[r - 1] = strides[d];
      continue;
    }
    out.shape[r] = shape[d];
    out.strides[r] = strides[d];
    ++out.rank;
  }
  return out;
}

// Element offset (possibly negative) of the element at row-major position `linear`.
BALLAST_HD int64_t strided_offset(const StridedLayout& layout, uint64_t linear) {
  int64_t offset = 0;
  for (int d = layout.rank - 1; d >= 0; --d) {
    const auto extent = static_cast<uint64_t>(layout.shape[d]);
    offset += static_cast<int64_t>(linear % extent) * layout.strides[d];
    linear /= extent;
  }
  return offset;
}

// What one thread of the strided copy does: output element i from its place in src.
template <typename Element>
BALLAST_HD void strided_copy_element(const StridedLayout& layout, const Element* src, Element* dst,
                                     uint64_t i) {
  dst[i] = src[strided_offset(layout, i)];
}

// A strided copy with strided destination: the same shape walked through two sets of strides.
struct StridedPairLayout {
  int rank = 0;  // 0 when the view is one element (offsets 0)
  int64_t shape[kMaxStridedRank] = {};
  int64_t src_strides[kMaxStridedRank] = {};  // elements
  int64_t dst_strides[kMaxStridedRank] = {};  // elements
};

// shape and both strides have the same rank, at most kMaxStridedRank, and no zero extent.
// Neighbours merge only when they step through both source and destination as one dimension.
inline StridedPairLayout simplify_pair_layout(std::span<const int64_t> shape,
                                              std::span<const int64_t> src_strides,
                                              std::span<const int64_t> dst_strides) {
  StridedPairLayout out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const int r = out.rank;
    if (r > 0 && out.src_strides[r - 1] == src_strides[d] * shape[d] &&
        out.dst_strides[r - 1] == dst_strides[d] * shape[d]) {
      out.shape[r - 1] *= shape[d];
      out.src_strides[r - 1] = src_strides[d];
      out.dst_strides[r - 1] = dst_strides[d];
      continue;
    }
    out.shape[r] = shape[d];
    out.src_strides[r] = src_strides[d];
    out.dst_strides[r] = dst_strides[d];
    ++out.rank;
  }
  return out;
}

// What one thread of the strided scatter does: the element at row-major position i of the
// shape, from its place in src to its place in dst.
template <typename Element>
BALLAST_HD void strided_scatter_element(const StridedPairLayout& layout, const Element* src,
                                        Element* dst, uint64_t i) {
  int64_t from = 0;
  int64_t to = 0;
  for (int d = layout.rank - 1; d >= 0; --d) {
    const auto extent = static_cast<uint64_t>(layout.shape[d]);
    const auto index = static_cast<int64_t>(i % extent);
    from += index * layout.src_strides[d];
    to += index * layout.dst_strides[d];
    i /= extent;
  }
  dst[to] = src[from];
}

}  // namespace ballast::cuda
