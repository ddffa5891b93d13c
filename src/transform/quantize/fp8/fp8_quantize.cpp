// FP8 per-tensor quantization (see fp8_quantize.hpp).
#include "transform/quantize/fp8/fp8_quantize.hpp"

#include <algorithm>
#include <cstdint>

#include "transform/float_bits.hpp"
#include "transform/quantize/range_params.hpp"

namespace ballast {

float fp8_max(DType fp8_dtype) { return fp8_dtype == DType::f8_e5m2 ? 57344.0f : 448.0f; }

void quantize_fp8(std::span<const float> weight, DType fp8_dtype, const PartBuffers& out) {
  const float limit = fp8_max(fp8_dtype);
  const MiniFloat format = fp8_dtype == DType::f8_e5m2 ? kE5M2 : kE4M3;
  const float amax = max_abs(weight);
  const float scale = amax > 0.0f ? amax / limit : 1.0f;
  out.as<float>("scale")[0] = scale;
  auto q = out.as<uint8_t>("qweight");
  for (size_t i = 0; i < weight.size(); ++i)
    q[i] = f32_to_minifloat(std::clamp(weight[i] / scale, -limit, limit), format);
}

}  // namespace ballast
