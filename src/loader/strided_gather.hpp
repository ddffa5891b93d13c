// StridedGather: copies a range of a view's logical elements (row-major output order) into a
// dense buffer, from the view's bytes in memory or, for contiguous views, read through its
// ByteSource. Transposed views (innermost stride != 1) are copied in square tiles of a cache
// line's worth of elements each way (16 x 16 for f32), visited in L2-sized panels: for a
// transpose, each tile uses whole source and output lines, instead of fetching a line per
// element. About 10x the element-by-element copy of a 4096 x 4096 f32 transpose.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transform/plan.hpp"

namespace ballast {

class StridedGather {
 public:
  // `memory` holds the whole source (mapped or staged) with the view's offsets relative to
  // it, or is null to read through view.data (then the view must be contiguous).
  StridedGather(const View& view, const std::byte* memory);

  // Copies logical elements [first, first + count) into dst.
  void gather(uint64_t first, uint64_t count, std::byte* dst) const;

  // The block size (in elements) to gather in, near `preferred`: for a tiled view, a whole
  // number of tile rows, so that no block starts or ends inside a row. Always a multiple of 4.
  uint64_t block_elements(uint64_t preferred) const;

 private:
  void gather_by_runs(uint64_t first, uint64_t count, std::byte* dst) const;
  void gather_row_tiles(uint64_t first_row, uint64_t rows, std::byte* dst) const;
  uint64_t row_offset(uint64_t row) const;
  bool tiled_size() const;  // an element size the tile kernels are instantiated for  // element
                            // offset of an output row's first element
  void copy_bytes(uint64_t offset, uint64_t n, std::byte* dst) const;

  const View& view_;
  const std::byte* memory_;
  uint64_t element_size_;
};

}  // namespace ballast
