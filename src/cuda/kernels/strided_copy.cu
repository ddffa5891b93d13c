// Transposes and slices on the device (device_kernels.hpp): a strided view gathered into a
// contiguous buffer, one thread per output element, so the writes coalesce; the reads of a
// transpose stride through memory and are served by L2 (the copy runs far faster than the
// bus that fed it).
#include <string>

#include "cuda/device_kernels.hpp"
#include "cuda/kernels/launch_support.cuh"
#include "cuda/kernels/strided_layout.cuh"

namespace ballast::cuda {
namespace {

struct alignas(16) Bytes16 {
  uint64_t low;
  uint64_t high;
};

template <typename Element>
__global__ void strided_copy_kernel(StridedLayout layout, const Element* src, Element* dst,
                                    uint64_t n) {
  for (uint64_t i = first_index(); i < n; i += grid_stride())
    strided_copy_element(layout, src, dst, i);
}

template <typename Element>
void launch(const StridedLayout& layout, const void* src, void* dst, uint64_t n, void* stream) {
  strided_copy_kernel<<<blocks_for(n), kThreadsPerBlock, 0, as_stream(stream)>>>(
      layout, static_cast<const Element*>(src), static_cast<Element*>(dst), n);
}

}  // namespace

void launch_strided_copy(const void* src, void* dst, uint32_t element_size,
                         std::span<const int64_t> shape, std::span<const int64_t> strides,
                         void* stream) {
  if (shape.empty() || shape.size() > kMaxStridedRank || strides.size() != shape.size())
    throw Error(ErrorCode::invalid_argument,
                "launch_strided_copy: rank " + std::to_string(shape.size()) + " with " +
                    std::to_string(strides.size()) + " strides; expected 1.." +
                    std::to_string(kMaxStridedRank) + " of each");
  uint64_t n = 1;
  for (int64_t extent : shape) n *= static_cast<uint64_t>(extent);
  if (n == 0) return;
  const StridedLayout layout = simplify_layout(shape, strides);
  switch (element_size) {
    case 1: launch<uint8_t>(layout, src, dst, n, stream); break;
    case 2: launch<uint16_t>(layout, src, dst, n, stream); break;
    case 4: launch<uint32_t>(layout, src, dst, n, stream); break;
    case 8: launch<uint64_t>(layout, src, dst, n, stream); break;
    case 16: launch<Bytes16>(layout, src, dst, n, stream); break;
    default:
      throw Error(ErrorCode::invalid_argument, "launch_strided_copy: element size " +
                                                   std::to_string(element_size) +
                                                   " is not 1, 2, 4, 8 or 16 bytes");
  }
  check_cuda("strided_copy_kernel");
}

}  // namespace ballast::cuda
