// Exact conversions between f32 and the narrow float formats ballast stores: IEEE f16, bf16
// and the OCP FP8 formats e4m3fn and e5m2. Every narrowing conversion rounds to nearest-even;
// NaN stays NaN; e4m3fn (which has no infinity) saturates to +-448, e5m2 overflows to
// infinity as IEEE formats do.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace ballast {

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t man = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000 | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {                                   // subnormal: normalize
    int shift = std::countl_zero(man) - 21;  // leading zeros within the 10-bit field
    man = (man << shift) & 0x3FF;
    bits = sign | (static_cast<uint32_t>(113 - shift) << 23) | (man << 13);
  }
  return std::bit_cast<float>(bits);
}

inline uint16_t f32_to_f16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t abs = x & 0x7FFFFFFF;
  if (abs > 0x7F800000) return static_cast<uint16_t>(sign | 0x7E00 | ((abs >> 13) & 0x3FF));
  if (abs >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);  // rounds to infinity
  if (abs < 0x38800000) {  // f16 subnormal or zero: add the magic to round at the right bit
    float magic = std::bit_cast<float>(abs) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(magic) - 0x3F000000));
  }
  uint32_t rounded = abs + 0x0FFF + ((abs >> 13) & 1);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000) >> 13));
}

inline float bf16_to_f32(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline uint16_t f32_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

// A small float format: 1 sign bit, E exponent bits, M mantissa bits.
struct MiniFloat {
  int exp_bits;
  int man_bits;
  int bias;
  bool has_inf;   // IEEE-style: all-ones exponent is inf/NaN (e5m2)
  bool saturate;  // overflow goes to the largest finite value instead of inf/NaN
};

inline constexpr MiniFloat kE4M3 = {4, 3, 7, false, true};
inline constexpr MiniFloat kE5M2 = {5, 2, 15, true, false};

inline float minifloat_to_f32(uint8_t v, MiniFloat fmt) {
  const int man_mask = (1 << fmt.man_bits) - 1;
  const int exp_max = (1 << fmt.exp_bits) - 1;
  const bool neg = (v >> (fmt.exp_bits + fmt.man_bits)) & 1;
  const int exp = (v >> fmt.man_bits) & exp_max;
  const int man = v & man_mask;
  float value;
  if (fmt.has_inf && exp == exp_max) {
    value = man == 0 ? INFINITY : NAN;
  } else if (!fmt.has_inf && exp == exp_max && man == man_mask) {
    value = NAN;
  } else if (exp == 0) {
    value = std::ldexp(static_cast<float>(man), 1 - fmt.bias - fmt.man_bits);
  } else {
    value =
        std::ldexp(static_cast<float>(man | (1 << fmt.man_bits)), exp - fmt.bias - fmt.man_bits);
  }
  return neg ? -value : value;
}

inline uint8_t f32_to_minifloat(float f, MiniFloat fmt) {
  const int sign_shift = fmt.exp_bits + fmt.man_bits;
  const uint8_t sign = std::signbit(f) ? static_cast<uint8_t>(1u << sign_shift) : 0;
  const int exp_max = (1 << fmt.exp_bits) - 1;
  const int man_mask = (1 << fmt.man_bits) - 1;
  const uint8_t nan_code =
      static_cast<uint8_t>(fmt.has_inf ? (exp_max << fmt.man_bits) | (1 << (fmt.man_bits - 1))
                                       : (exp_max << fmt.man_bits) | man_mask);
  const uint8_t inf_code = static_cast<uint8_t>(exp_max << fmt.man_bits);
  // Largest finite: exponent field exp_max - 1 (has_inf) or exp_max with mantissa all-ones - 1.
  const int top_exp = fmt.has_inf ? exp_max - 1 : exp_max;
  const int top_man = fmt.has_inf ? man_mask : man_mask - 1;
  const uint8_t max_code = static_cast<uint8_t>((top_exp << fmt.man_bits) | top_man);
  if (std::isnan(f)) return static_cast<uint8_t>(sign | nan_code);
  float a = std::fabs(f);
  auto overflow = [&] {
    return static_cast<uint8_t>(sign | (fmt.saturate  ? max_code
                                        : fmt.has_inf ? inf_code
                                                      : nan_code));
  };
  if (std::isinf(a)) return overflow();
  const float min_normal = std::ldexp(1.0f, 1 - fmt.bias);
  int code;
  if (a < min_normal) {
    code = static_cast<int>(std::nearbyint(std::ldexp(a, fmt.bias - 1 + fmt.man_bits)));
  } else {
    int e;
    float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    e -= 1;                       // a = (2m) * 2^e, 2m in [1, 2)
    int man = static_cast<int>(std::nearbyint(std::ldexp(2 * m - 1, fmt.man_bits)));
    if (man > man_mask) {
      man = 0;
      ++e;
    }
    int field = e + fmt.bias;
    if (field > top_exp || (field == top_exp && man > top_man)) return overflow();
    code = (field << fmt.man_bits) | man;
  }
  return static_cast<uint8_t>(sign | code);
}

}  // namespace ballast
