// The Highway kernels give exactly the bits of the scalar conversions in float_bits.hpp: all
// 65536 f16 and bf16 codes widened, a million f32 bit patterns spread over the whole range
// (every sign, exponent, subnormal, infinity and NaN) narrowed, the int8 row quantizer against
// its scalar formula, and every length from 0 to 100 so the vector tails are covered.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "transform/float_bits.hpp"
#include "transform/simd_kernels.hpp"

namespace ballast {
namespace {

std::vector<uint16_t> all_u16() {
  std::vector<uint16_t> v(65536);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint16_t>(i);
  return v;
}

std::vector<float> spread_f32() {
  std::vector<float> v;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += 4093)
    v.push_back(std::bit_cast<float>(uint32_t(bits)));
  // Rounding boundaries of f16 and bf16: values just around the halfway points.
  for (uint32_t base :
       {0x38800000u, 0x477FE000u, 0x477FF000u, 0x33000000u, 0x3F800000u, 0x7F7F8000u})
    for (uint32_t d = 0; d < 0x4000; ++d) {
      v.push_back(std::bit_cast<float>(base + d));
      v.push_back(std::bit_cast<float>((base + d) | 0x80000000u));
    }
  return v;
}

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }

TEST(SimdKernels, WideningIsBitExactForEveryCode) {
  const auto in = all_u16();
  std::vector<float> out(in.size());
  simd_bf16_to_f32(in.data(), out.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(bits_of(out[i]), bits_of(bf16_to_f32(in[i]))) << i;
  simd_f16_to_f32(in.data(), out.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(bits_of(out[i]), bits_of(f16_to_f32(in[i]))) << i;
}

TEST(SimdKernels, NarrowingIsBitExactAcrossTheRange) {
  const auto in = spread_f32();
  std::vector<uint16_t> out(in.size());
  simd_f32_to_bf16(in.data(), out.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(out[i], f32_to_bf16(in[i])) << std::hex << bits_of(in[i]);
  simd_f32_to_f16(in.data(), out.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(out[i], f32_to_f16(in[i])) << std::hex << bits_of(in[i]);
}

TEST(SimdKernels, EveryLengthHandlesItsTail) {
  const auto codes = all_u16();
  for (size_t n = 0; n <= 100; ++n) {
    std::vector<float> wide(n + 1, -7.0f);
    simd_f16_to_f32(codes.data() + 15360, wide.data(), n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(bits_of(wide[i]), bits_of(f16_to_f32(codes[15360 + i])));
    EXPECT_EQ(wide[n], -7.0f) << "wrote past " << n;
    std::vector<uint16_t> narrow(n + 1, 0xABCD);
    simd_f32_to_bf16(wide.data(), narrow.data(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(narrow[i], f32_to_bf16(wide[i]));
    EXPECT_EQ(narrow[n], 0xABCD) << "wrote past " << n;
  }
}

TEST(SimdKernels, Int8RowQuantizerMatchesTheFormula) {
  std::vector<float> row(1000);
  for (size_t i = 0; i < row.size(); ++i) row[i] = std::sin(0.37f * static_cast<float>(i)) * 3.0f;
  row[10] = 1.5f * (3.0f / 127);  // ties round to even
  row[11] = 2.5f * (3.0f / 127);
  row[12] = -3.0f;
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{33}, row.size()}) {
    const float amax = simd_max_abs(row.data(), n);
    float want_amax = 0;
    for (size_t i = 0; i < n; ++i) want_amax = std::max(want_amax, std::fabs(row[i]));
    ASSERT_EQ(amax, want_amax) << n;
    const float scale = 3.0f / 127;
    std::vector<int8_t> q(n + 1, 99);
    simd_quantize_int8(row.data(), scale, q.data(), n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(q[i],
                static_cast<int8_t>(std::clamp(std::nearbyint(row[i] / scale), -127.0f, 127.0f)))
          << i;
    EXPECT_EQ(q[n], 99);
  }
}

}  // namespace
}  // namespace ballast
