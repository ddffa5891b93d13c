// Per-group f16 scales and zero points (see group_params.hpp).
#include "transform/quantize/group_params.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "transform/float_bits.hpp"

namespace ballast {
namespace {

RangeParams awq_params(std::span<const float> values, int maxq, bool zero_point) {
  if (!zero_point) {
    const float half = static_cast<float>((maxq + 1) / 2);
    return {std::max(max_abs(values), 1e-5f) / (half - 1.0f), half};
  }
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  const float scale = std::max(*hi - *lo, 1e-5f) / static_cast<float>(maxq);
  const float zero = std::clamp(-round_half_even(*lo / scale), 0.0f, static_cast<float>(maxq));
  return {scale, zero};
}

}  // namespace

GroupParams f16_group_params(std::span<const float> weight, WeightDims dims, int64_t group,
                             int maxq, GroupRule rule) {
  const int64_t groups = dims.in / group;
  GroupParams p;
  const size_t n = static_cast<size_t>(dims.out * groups);
  p.scales.resize(n);
  p.scale_bits.resize(n);
  p.zeros.resize(n);
  for (int64_t o = 0; o < dims.out; ++o)
    for (int64_t g = 0; g < groups; ++g) {
      const auto values =
          weight.subspan(static_cast<size_t>(o * dims.in + g * group), static_cast<size_t>(group));
      const RangeParams r = rule == GroupRule::gptq
                                ? asymmetric_params(values, maxq)
                                : awq_params(values, maxq, rule == GroupRule::awq_zp);
      const uint16_t bits = f32_to_f16(r.scale);
      if ((bits & 0x7C00) == 0x7C00)
        throw Error(ErrorCode::unsupported,
                    fmt::format("group scale {} of row {} does not fit in f16", r.scale, o));
      const size_t k = static_cast<size_t>(o * groups + g);
      p.scales[k] = f16_to_f32(bits);
      p.scale_bits[k] = bits;
      p.zeros[k] = r.zero;
    }
  return p;
}

}  // namespace ballast
