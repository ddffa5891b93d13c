// torch.chunk's split of a dimension among ranks (see ballast/tensor_parallel.hpp).
#include <algorithm>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "ballast/tensor_parallel.hpp"

namespace ballast {

ChunkRange chunk_range(int64_t extent, int rank, int world) {
  // ceil(extent / world) without overflow; extent >= 0 and world >= 1.
  const int64_t chunk = extent / world + (extent % world != 0 ? 1 : 0);
  int64_t start = 0;
  if (__builtin_mul_overflow(chunk, int64_t{rank}, &start) || start > extent) start = extent;
  return {start, std::min(extent, start + chunk)};
}

int chunk_owner(int64_t index, int64_t extent, int world) {
  if (world < 1 || index < 0 || index >= extent)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("index {} is not in 0..{} (world size {})", index, extent - 1, world));
  const int64_t chunk = extent / world + (extent % world != 0 ? 1 : 0);
  return static_cast<int>(index / chunk);
}

}  // namespace ballast
