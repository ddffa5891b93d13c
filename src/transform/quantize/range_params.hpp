// Scale and zero point of one quantization range, shared by the integer schemes.
//
// Asymmetric ranges follow AutoGPTQ's Quantizer.find_params: the range always includes 0
// (min <= 0 <= max), an all-zero range becomes [-1, 1], scale = (max - min) / maxq and
// zero = round(-min / scale). Values quantize as clamp(round(x / scale) + zero, 0, maxq).
// Rounding is half-to-even everywhere (std::nearbyint in the default rounding mode), as
// torch.round.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>

namespace ballast {

struct RangeParams {
  float scale;
  float zero;
};

inline float round_half_even(float x) { return std::nearbyint(x); }

inline RangeParams asymmetric_params(std::span<const float> values, int maxq) {
  float lo = 0.0f, hi = 0.0f;
  for (float v : values) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo == 0.0f && hi == 0.0f) {
    lo = -1.0f;
    hi = 1.0f;
  }
  const float scale = (hi - lo) / static_cast<float>(maxq);
  return {scale, round_half_even(-lo / scale)};
}

// clamp(round(x / scale) + zero, 0, maxq) with the scale the checkpoint stores; a scale that
// underflowed to 0 in f16 maps every value to the zero point.
inline int quantize_affine(float x, float scale, float zero, int maxq) {
  if (scale == 0.0f) return static_cast<int>(zero);
  const float q = round_half_even(x / scale) + zero;
  return static_cast<int>(std::clamp(q, 0.0f, static_cast<float>(maxq)));
}

inline float max_abs(std::span<const float> values) {
  float amax = 0.0f;
  for (float v : values) amax = std::max(amax, std::fabs(v));
  return amax;
}

}  // namespace ballast
