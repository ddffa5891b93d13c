// StridedChunks: a strided view (a transpose, a slice, both) cut into chunks whose stored bytes
// are one contiguous span of at most a budget: the view's dimensions in stored order (largest
// stride first), the outer ones walked index by index, one dimension split into runs of
// indices, the inner ones whole. Each chunk's span is uploaded as stored and its elements
// scattered on the device into their places in the dense (row-major) result, so a device load
// of a strided view needs no device memory beyond the tensor and the staging scratch.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ballast/tensor.hpp"

namespace ballast {

struct StridedChunk {
  uint64_t src_offset = 0;  // elements from the view's first element to the span's first
  uint64_t span = 0;        // elements the stored span holds (those between the view's too)
  uint64_t dst_offset = 0;  // elements from the result's first element to the chunk's first
  Shape shape;              // the chunk's extents, one per view dimension
};

class StridedChunks {
 public:
  // shape and strides (elements, positive where the extent is above 1) of the same rank;
  // max_span (elements) at least 1.
  StridedChunks(const Shape& shape, std::span<const int64_t> strides, uint64_t max_span);

  // The result's row-major strides (elements), which each chunk's scatter writes through.
  const std::vector<int64_t>& dst_strides() const { return dst_strides_; }
  uint64_t count() const { return count_; }

  // Chunk i of count() (a view of no elements has none), in stored order.
  StridedChunk at(uint64_t i) const;

 private:
  Shape shape_;
  std::vector<int64_t> strides_;
  std::vector<int64_t> dst_strides_;
  std::vector<size_t> order_;  // dimensions of extent above 1, largest stride first
  size_t split_ = 0;           // position in order_ of the dimension split into runs
  uint64_t run_ = 1;           // indices of that dimension per chunk
  uint64_t inner_span_ = 1;    // span of one index of it, inner dimensions whole
  uint64_t count_ = 0;
};

}  // namespace ballast
