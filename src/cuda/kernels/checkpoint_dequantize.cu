// GPTQ, AWQ, FP8, int8 and int4 dequantization on the device (device_kernels.hpp): one thread per
// element of the dense [out, in] weight, each computing it with checkpoint_math.cuh and storing it
// in the target dtype.
#include <string>

#include "cuda/device_kernels.hpp"
#include "cuda/kernels/checkpoint_math.cuh"
#include "cuda/kernels/launch_support.cuh"

namespace ballast::cuda {
namespace {

template <typename Parts, float (*Element)(const Parts&, int64_t, int64_t)>
__global__ void checkpoint_kernel(Parts parts, DType to, void* dst, uint64_t n) {
  for (uint64_t k = first_index(); k < n; k += grid_stride())
    dequantize_dense_element<Parts, Element>(parts, to, dst, k);
}

void require(bool ok, const char* kernel, const std::string& what) {
  if (!ok) throw Error(ErrorCode::invalid_argument, std::string(kernel) + ": " + what);
}

// The checks every scheme shares: the dense dtype, the float dtype of the scales, the sizes.
void require_common(const char* kernel, DType to, DType scales_dtype, int64_t out, int64_t in) {
  if (to != DType::f32 && to != DType::f16 && to != DType::bf16)
    throw Error(ErrorCode::unsupported, std::string(kernel) + " writes f32, f16 or bf16, not " +
                                            std::string(dtype_name(to)));
  if (!is_cast_target(scales_dtype))
    throw Error(ErrorCode::unsupported, std::string(kernel) + ": scales of dtype " +
                                            std::string(dtype_name(scales_dtype)) +
                                            " have no device kernel");
  require(out >= 0 && in >= 0, kernel, "negative dimensions");
}

template <typename Parts, float (*Element)(const Parts&, int64_t, int64_t)>
void launch(const Parts& parts, DType to, void* dst, void* stream, const char* kernel) {
  const auto n = static_cast<uint64_t>(parts.out) * static_cast<uint64_t>(parts.in);
  if (n == 0) return;
  checkpoint_kernel<Parts, Element>
      <<<blocks_for(n), kThreadsPerBlock, 0, as_stream(stream)>>>(parts, to, dst, n);
  check_cuda(kernel);
}

}  // namespace

void launch_gptq_dequantize(const GptqParts& parts, DType to, void* dst, void* stream) {
  const char* kernel = "gptq_dequantize";
  require_common(kernel, to, parts.scales_dtype, parts.out, parts.in);
  const int bits = parts.bits;
  require(bits == 2 || bits == 3 || bits == 4 || bits == 8, kernel,
          "bits must be 2, 3, 4 or 8, not " + std::to_string(bits));
  require(parts.groups > 0 && parts.in % parts.groups == 0 && (parts.out * bits) % 32 == 0 &&
              (parts.in * bits) % 32 == 0,
          kernel, "groups must divide in_features, and out and in fill whole 32-bit words");
  require(
      parts.g_idx == nullptr || parts.g_idx_dtype == DType::i32 || parts.g_idx_dtype == DType::i64,
      kernel, "g_idx must be i32 or i64");
  launch<GptqParts, gptq_element>(parts, to, dst, stream, kernel);
}

void launch_awq_dequantize(const AwqParts& parts, DType to, void* dst, void* stream) {
  const char* kernel = "awq_dequantize";
  require_common(kernel, to, parts.scales_dtype, parts.out, parts.in);
  require(parts.out % 8 == 0 && parts.groups > 0 && parts.in % parts.groups == 0, kernel,
          "out_features must be a multiple of 8 and groups must divide in_features");
  launch<AwqParts, awq_element>(parts, to, dst, stream, kernel);
}

void launch_fp8_dequantize(const Fp8Parts& parts, DType to, void* dst, void* stream) {
  const char* kernel = "fp8_dequantize";
  require_common(kernel, to, parts.scale_dtype, parts.out, parts.in);
  if (parts.qweight_dtype != DType::f8_e4m3 && parts.qweight_dtype != DType::f8_e5m2)
    throw Error(ErrorCode::unsupported, std::string(kernel) + ": qweight of dtype " +
                                            std::string(dtype_name(parts.qweight_dtype)));
  require(parts.row_block > 0 && parts.col_block > 0 && parts.scale_rows > 0 &&
              parts.scale_cols > 0 &&
              (parts.out == 0 || (parts.out - 1) / parts.row_block < parts.scale_rows) &&
              (parts.in == 0 || (parts.in - 1) / parts.col_block < parts.scale_cols),
          kernel, "the scale grid does not cover the weight");
  launch<Fp8Parts, fp8_element>(parts, to, dst, stream, kernel);
}

void launch_int8_dequantize(const Int8Parts& parts, DType to, void* dst, void* stream) {
  const char* kernel = "int8_dequantize";
  require_common(kernel, to, parts.scales_dtype, parts.out, parts.in);
  require(parts.qweight_dtype == (parts.qzeros == nullptr ? DType::i8 : DType::u8), kernel,
          "qweight must be i8 without zero points, u8 with them");
  launch<Int8Parts, int8_element>(parts, to, dst, stream, kernel);
}

void launch_int4_dequantize(const Int4Parts& parts, DType to, void* dst, void* stream) {
  const char* kernel = "int4_dequantize";
  require_common(kernel, to, parts.scales_dtype, parts.out, parts.in);
  require(parts.in % 2 == 0 && parts.groups > 0 && parts.in % parts.groups == 0, kernel,
          "in_features must be even and groups must divide it");
  launch<Int4Parts, int4_element>(parts, to, dst, stream, kernel);
}

}  // namespace ballast::cuda
