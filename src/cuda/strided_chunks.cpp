// Cutting strided views into contiguous stored spans (see strided_chunks.hpp).
#include "cuda/strided_chunks.hpp"

#include <algorithm>

namespace ballast {

StridedChunks::StridedChunks(const Shape& shape, std::span<const int64_t> strides,
                             uint64_t max_span)
    : shape_(shape), strides_(strides.begin(), strides.end()), dst_strides_(shape.size(), 1) {
  for (size_t d = shape.size(); d-- > 1;) dst_strides_[d - 1] = dst_strides_[d] * shape[d];
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] > 1) order_.push_back(d);
  std::stable_sort(order_.begin(), order_.end(),
                   [&](size_t a, size_t b) { return strides_[a] > strides_[b]; });
  // The outermost position whose one index, inner dimensions whole, fits the budget.
  std::vector<uint64_t> inner(order_.size() + 1, 1);
  for (size_t j = order_.size(); j-- > 0;)
    inner[j] = inner[j + 1] + static_cast<uint64_t>(shape_[order_[j]] - 1) *
                                  static_cast<uint64_t>(strides_[order_[j]]);
  count_ = 1;
  if (order_.empty()) return;  // one element
  split_ = 0;
  while (inner[split_ + 1] > max_span) ++split_;
  inner_span_ = inner[split_ + 1];
  const size_t d = order_[split_];
  const auto stride = static_cast<uint64_t>(strides_[d]);
  const auto extent = static_cast<uint64_t>(shape_[d]);
  run_ = std::clamp<uint64_t>(max_span >= inner_span_ ? (max_span - inner_span_) / stride + 1 : 1,
                              1, extent);
  for (size_t j = 0; j < split_; ++j) count_ *= static_cast<uint64_t>(shape_[order_[j]]);
  count_ *= (extent + run_ - 1) / run_;
}

StridedChunk StridedChunks::at(uint64_t i) const {
  StridedChunk chunk;
  chunk.shape = shape_;
  chunk.span = 1;
  if (order_.empty()) return chunk;
  const size_t d = order_[split_];
  const auto extent = static_cast<uint64_t>(shape_[d]);
  const uint64_t runs = (extent + run_ - 1) / run_;
  const uint64_t first = i % runs * run_;
  uint64_t outer = i / runs;
  for (size_t j = split_; j-- > 0;) {  // the outer dimensions' indices, innermost first
    const size_t o = order_[j];
    const auto index = static_cast<int64_t>(outer % static_cast<uint64_t>(shape_[o]));
    outer /= static_cast<uint64_t>(shape_[o]);
    chunk.shape[o] = 1;
    chunk.src_offset += static_cast<uint64_t>(index * strides_[o]);
    chunk.dst_offset += static_cast<uint64_t>(index * dst_strides_[o]);
  }
  const uint64_t n = std::min(run_, extent - first);
  chunk.shape[d] = static_cast<int64_t>(n);
  chunk.src_offset += first * static_cast<uint64_t>(strides_[d]);
  chunk.dst_offset += first * static_cast<uint64_t>(dst_strides_[d]);
  chunk.span = (n - 1) * static_cast<uint64_t>(strides_[d]) + inner_span_;
  return chunk;
}

}  // namespace ballast
