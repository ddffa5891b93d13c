// Casts and the scale step on the device (device_kernels.hpp): one kernel per source dtype,
// each a grid-stride loop over element_math.cuh's cast_element_to / scale_element.
#include <string>

#include "cuda/device_kernels.hpp"
#include "cuda/kernels/element_math.cuh"
#include "cuda/kernels/launch_support.cuh"

namespace ballast::cuda {
namespace {

template <DType From>
__global__ void cast_kernel(DType to, const void* src, void* dst, uint64_t n) {
  for (uint64_t i = first_index(); i < n; i += grid_stride())
    cast_element_to<From>(to, src, dst, i);
}

template <DType D>
__global__ void scale_kernel(void* data, uint64_t n, double factor) {
  for (uint64_t i = first_index(); i < n; i += grid_stride()) scale_element<D>(data, i, factor);
}

[[noreturn]] void unsupported(const std::string& what) {
  throw Error(ErrorCode::unsupported, what + " has no device kernel");
}

}  // namespace

bool device_can_cast(DType from, DType to) {
  if (from == to) return true;
  if (device_can_dequantize_ggml(from)) return is_cast_target(to);
  return is_cast_source(from) && is_cast_target(to);
}

void launch_cast(DType from, DType to, const void* src, void* dst, uint64_t count, void* stream) {
  if (!device_can_cast(from, to))
    unsupported(std::string("cast from ") + std::string(dtype_name(from)) + " to " +
                std::string(dtype_name(to)));
  if (from != to && device_can_dequantize_ggml(from))
    return launch_ggml_dequantize(from, to, src, dst, count, stream);
  if (count == 0) return;
  if (from == to) {
    const auto bytes = dtype_bytes_for(from, count);
    if (!bytes)
      throw Error(ErrorCode::invalid_argument, std::to_string(count) + " elements of " +
                                                   std::string(dtype_name(from)) +
                                                   " are not whole blocks");
    cudaMemcpyAsync(dst, src, *bytes, cudaMemcpyDeviceToDevice, as_stream(stream));
    return check_cuda("cudaMemcpyAsync (launch_cast)");
  }
  with_cast_source(from, [&](auto tag) {
    cast_kernel<decltype(tag)::value>
        <<<blocks_for(count), kThreadsPerBlock, 0, as_stream(stream)>>>(to, src, dst, count);
  });
  check_cuda("cast_kernel");
}

bool device_can_scale(DType dtype) { return is_scale_dtype(dtype); }

void launch_scale(DType dtype, void* data, uint64_t count, double factor, void* stream) {
  if (!device_can_scale(dtype)) unsupported("scale of " + std::string(dtype_name(dtype)));
  if (count == 0) return;
  with_cast_source(dtype, [&](auto tag) {
    if constexpr (is_scale_dtype(decltype(tag)::value))
      scale_kernel<decltype(tag)::value>
          <<<blocks_for(count), kThreadsPerBlock, 0, as_stream(stream)>>>(data, count, factor);
  });
  check_cuda("scale_kernel");
}

}  // namespace ballast::cuda
