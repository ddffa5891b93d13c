// Tensor-parallel helpers: which indices of a dimension a rank keeps (torch.chunk's rule, used
// by the Shard step), which rank holds an index (an MoE expert's rank), and the byte ranges a
// load with transformations reads from a stored tensor, so a rank (or, later, a cooperative
// loader) can plan its reads before any byte moves.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ballast/dtype.hpp"
#include "ballast/tensor.hpp"
#include "ballast/transform.hpp"

namespace ballast {

// [start, end) of an extent of `extent` indices that rank `rank` of `world` keeps:
// torch.chunk(t, world)[rank], chunks of ceil(extent / world), so trailing ranks may get fewer
// or none (extent 10, world 4: 3, 3, 3, 1; extent 2, world 4: 1, 1, 0, 0). Requires
// 0 <= rank < world and extent >= 0.
struct ChunkRange {
  int64_t start = 0;
  int64_t end = 0;
};
ChunkRange chunk_range(int64_t extent, int rank, int world);

// The rank whose chunk_range holds `index` (0 <= index < extent): with experts stacked along a
// dimension, the rank that loads expert `index`; with one tensor per expert, the rank that
// loads that expert's tensors. Throws Error(invalid_argument) for an index out of range.
int chunk_owner(int64_t index, int64_t extent, int world);

struct ByteRange {
  uint64_t offset = 0;  // from the tensor's first stored byte
  uint64_t nbytes = 0;
};

// The reads a load of a row-major stored tensor of `dtype` and `shape` with `steps` makes from
// a source it cannot map (a remote source, read mode), in order: one range per contiguous run
// of the view, runs whose gap is at most `max_gap_bytes` read as one range (the gap is read and
// dropped, cheaper than another request). A transposed view (innermost stride not 1) reads
// the span it covers. Throws what the planner throws for steps that do not fit.
std::vector<ByteRange> planned_reads(DType dtype, const Shape& shape,
                                     std::span<const Transformation> steps,
                                     uint64_t max_gap_bytes = 64 << 10);

}  // namespace ballast
