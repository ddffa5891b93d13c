// GGUF block dequantization on the device (device_kernels.hpp): one kernel per block type, one
// thread per element, each running ggml_blocks.cuh's ggml_dequantize_element (decode the
// element, store it in the target dtype); writes coalesce, and the block bytes a warp shares come
// from L1.
#include <string>

#include "cuda/device_kernels.hpp"
#include "cuda/kernels/ggml_blocks.cuh"
#include "cuda/kernels/launch_support.cuh"

namespace ballast::cuda {
namespace {

template <DType T>
__global__ void ggml_kernel(DType to, const uint8_t* blocks, void* dst, uint64_t n) {
  for (uint64_t i = first_index(); i < n; i += grid_stride())
    ggml_dequantize_element<T>(to, blocks, dst, i);
}

}  // namespace

bool device_can_dequantize_ggml(DType block_type) {
  return with_ggml_type(block_type, [](auto) {});
}

void launch_ggml_dequantize(DType block_type, DType to, const void* blocks, void* dst,
                            uint64_t count, void* stream) {
  if (!device_can_dequantize_ggml(block_type) || !is_cast_target(to))
    throw Error(ErrorCode::unsupported, "dequantization of " + std::string(dtype_name(block_type)) +
                                            " to " + std::string(dtype_name(to)) +
                                            " has no device kernel");
  with_ggml_type(block_type, [&](auto tag) {
    constexpr DType type = decltype(tag)::value;
    if (count % GgmlBlock<type>::elements != 0)
      throw Error(ErrorCode::invalid_argument,
                  std::to_string(count) + " elements of " + std::string(dtype_name(type)) +
                      " are not whole " + std::to_string(GgmlBlock<type>::elements) +
                      "-element blocks");
    if (count == 0) return;
    ggml_kernel<type><<<blocks_for(count), kThreadsPerBlock, 0, as_stream(stream)>>>(
        to, static_cast<const uint8_t*>(blocks), dst, count);
    check_cuda("ggml_kernel");
  });
}

}  // namespace ballast::cuda
