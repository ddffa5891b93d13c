// Transposes and slices on the device (device_kernels.hpp): a strided view gathered into a
// contiguous buffer, one thread per output element, so the writes coalesce; the reads of a
// transpose stride through memory and are served by L2 (the copy runs far faster than the
// bus that fed it). The scatter variant writes through destination strides too (a chunk of a
// view into its place in the whole tensor).
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
__global__ void strided_scatter_kernel(StridedPairLayout layout, const Element* src, Element* dst,
                                       uint64_t n) {
  for (uint64_t i = first_index(); i < n; i += grid_stride())
    strided_scatter_element(layout, src, dst, i);
}

template <typename Element>
void launch(const StridedLayout& layout, const void* src, void* dst, uint64_t n, void* stream) {
  strided_copy_kernel<<<blocks_for(n), kThreadsPerBlock, 0, as_stream(stream)>>>(
      layout, static_cast<const Element*>(src), static_cast<Element*>(dst), n);
}

template <typename Element>
void launch(const StridedPairLayout& layout, const void* src, void* dst, uint64_t n, void* stream) {
  strided_scatter_kernel<<<blocks_for(n), kThreadsPerBlock, 0, as_stream(stream)>>>(
      layout, static_cast<const Element*>(src), static_cast<Element*>(dst), n);
}

// The element count of a checked shape (rank 1..kMaxStridedRank, every stride list of its
// rank).
uint64_t checked_count(const char* what, std::span<const int64_t> shape,
                       std::span<const int64_t> strides, std::span<const int64_t> more) {
  if (shape.empty() || shape.size() > kMaxStridedRank || strides.size() != shape.size() ||
      more.size() != shape.size())
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": rank " + std::to_string(shape.size()) + " with " +
                    std::to_string(strides.size()) + " and " + std::to_string(more.size()) +
                    " strides; expected 1.." + std::to_string(kMaxStridedRank) + " of each");
  uint64_t n = 1;
  for (int64_t extent : shape) n *= static_cast<uint64_t>(extent);
  return n;
}

template <typename Layout>
void launch_sized(const char* what, const Layout& layout, const void* src, void* dst,
                  uint32_t element_size, uint64_t n, void* stream) {
  switch (element_size) {
    case 1: launch<uint8_t>(layout, src, dst, n, stream); break;
    case 2: launch<uint16_t>(layout, src, dst, n, stream); break;
    case 4: launch<uint32_t>(layout, src, dst, n, stream); break;
    case 8: launch<uint64_t>(layout, src, dst, n, stream); break;
    case 16: launch<Bytes16>(layout, src, dst, n, stream); break;
    default:
      throw Error(ErrorCode::invalid_argument, std::string(what) + ": element size " +
                                                   std::to_string(element_size) +
                                                   " is not 1, 2, 4, 8 or 16 bytes");
  }
}

}  // namespace

void launch_strided_copy(const void* src, void* dst, uint32_t element_size,
                         std::span<const int64_t> shape, std::span<const int64_t> strides,
                         void* stream) {
  const uint64_t n = checked_count("launch_strided_copy", shape, strides, strides);
  if (n == 0) return;
  launch_sized("launch_strided_copy", simplify_layout(shape, strides), src, dst, element_size, n,
               stream);
  check_cuda("strided_copy_kernel");
}

void launch_strided_scatter(const void* src, void* dst, uint32_t element_size,
                            std::span<const int64_t> shape, std::span<const int64_t> src_strides,
                            std::span<const int64_t> dst_strides, void* stream) {
  const uint64_t n = checked_count("launch_strided_scatter", shape, src_strides, dst_strides);
  if (n == 0) return;
  launch_sized("launch_strided_scatter", simplify_pair_layout(shape, src_strides, dst_strides), src,
               dst, element_size, n, stream);
  check_cuda("strided_scatter_kernel");
}

}  // namespace ballast::cuda
