// Vectorized versions of the hot element kernels, dispatched at run time to the best
// instruction set the CPU has (Highway: SSE4, AVX2, AVX-512, NEON, ...). Each gives exactly
// the bits of its scalar counterpart in float_bits.hpp / int8_quantize.hpp, including
// round-to-nearest-even, subnormals, infinities and NaN; the tails shorter than a vector go
// through the scalar code.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ballast {

void simd_bf16_to_f32(const uint16_t* in, float* out, size_t n);
void simd_f16_to_f32(const uint16_t* in, float* out, size_t n);
void simd_f32_to_bf16(const float* in, uint16_t* out, size_t n);
void simd_f32_to_f16(const float* in, uint16_t* out, size_t n);
// q[i] = clamp(round_half_even(row[i] / scale), -127, 127).
void simd_quantize_int8(const float* row, float scale, int8_t* q, size_t n);
// max |row[i]|.
float simd_max_abs(const float* row, size_t n);

}  // namespace ballast
