// INT8 per-row quantization (see int8_quantize.hpp).
#include "transform/quantize/int8/int8_quantize.hpp"

#include <cstdint>

#include "transform/quantize/range_params.hpp"
#include "transform/simd_kernels.hpp"

namespace ballast {

float quantize_int8_row(const float* row, int64_t n, int8_t* q) {
  const float amax = simd_max_abs(row, static_cast<size_t>(n));
  const float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
  simd_quantize_int8(row, scale, q, static_cast<size_t>(n));
  return scale;
}

void quantize_int8(std::span<const float> weight, WeightDims dims, bool symmetric,
                   const PartBuffers& out) {
  auto scales = out.as<float>("scales");
  const size_t in = static_cast<size_t>(dims.in);
  if (symmetric) {
    auto q = out.as<int8_t>("qweight");
    for (int64_t r = 0; r < dims.out; ++r)
      scales[r] = quantize_int8_row(&weight[r * in], dims.in, &q[r * in]);
    return;
  }
  auto q = out.as<uint8_t>("qweight");
  auto zeros = out.as<uint8_t>("qzeros");
  for (int64_t r = 0; r < dims.out; ++r) {
    const auto row = weight.subspan(r * in, in);
    const RangeParams p = asymmetric_params(row, 255);
    scales[r] = p.scale;
    zeros[r] = static_cast<uint8_t>(p.zero);
    for (size_t i = 0; i < in; ++i)
      q[r * in + i] = static_cast<uint8_t>(quantize_affine(row[i], p.scale, p.zero, 255));
  }
}

}  // namespace ballast
