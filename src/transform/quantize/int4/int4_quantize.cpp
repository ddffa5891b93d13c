// INT4 grouped quantization (see int4_quantize.hpp).
#include "transform/quantize/int4/int4_quantize.hpp"

#include <cstdint>

#include "transform/quantize/range_params.hpp"

namespace ballast {

void quantize_int4(std::span<const float> weight, WeightDims dims, int group_size,
                   const PartBuffers& out) {
  auto packed = out.as<uint8_t>("qweight");
  auto scales = out.as<float>("scales");
  auto zeros = out.as<uint8_t>("zeros");
  const size_t in = static_cast<size_t>(dims.in);
  const size_t group = static_cast<size_t>(group_size);
  const size_t groups = in / group;
  for (size_t r = 0; r < static_cast<size_t>(dims.out); ++r) {
    for (size_t g = 0; g < groups; ++g) {
      const auto values = weight.subspan(r * in + g * group, group);
      const RangeParams p = asymmetric_params(values, 15);
      scales[r * groups + g] = p.scale;
      zeros[r * groups + g] = static_cast<uint8_t>(p.zero);
    }
    // A pair may straddle two groups when group_size is odd, so each value uses its own.
    auto code = [&](size_t i) {
      const size_t g = r * groups + i / group;
      return quantize_affine(weight[r * in + i], scales[g], zeros[g], 15);
    };
    for (size_t i = 0; i < in; i += 2)
      packed[r * (in / 2) + i / 2] = static_cast<uint8_t>(code(i) | (code(i + 1) << 4));
  }
}

}  // namespace ballast
