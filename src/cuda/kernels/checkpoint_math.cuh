// Dequantization of GPTQ, AWQ and FP8 checkpoints and ballast's int8 / int4 bundles one
// element at a time: each function is
// element (o, i) of the dense weight [out, in], computed as quantize/*_dequantize.cpp does
// (NaN scales and codes included: the *_x86 operations of element_math.cuh).
// Shared by the device kernels and tests/cuda_kernels_math_test.cpp (see element_math.cuh).
#pragma once

#include <cstdint>

#include "cuda/device_kernels.hpp"
#include "cuda/kernels/element_math.cuh"

namespace ballast::cuda {

BALLAST_HD uint32_t field_mask(int bits) { return (uint32_t{1} << bits) - 1; }

// Value `index` of a little-endian bit stream whose k-th word is words[k * stride] (GPTQ's
// packing; word_packing.hpp's get_streamed).
BALLAST_HD uint32_t streamed_value(const uint32_t* words, int64_t stride, int64_t index, int bits) {
  const int64_t bit = index * bits;
  const int64_t word = bit / 32;
  const int shift = static_cast<int>(bit % 32);
  uint64_t value = words[word * stride] >> shift;
  if (shift + bits > 32) value |= uint64_t{words[(word + 1) * stride]} << (32 - shift);
  return static_cast<uint32_t>(value) & field_mask(bits);
}

BALLAST_HD float gptq_element(const GptqParts& p, int64_t o, int64_t i) {
  int64_t g = i / (p.in / p.groups);
  if (p.g_idx != nullptr) {
    g = p.g_idx_dtype == DType::i64 ? static_cast<const int64_t*>(p.g_idx)[i]
                                    : static_cast<const int32_t*>(p.g_idx)[i];
    if (g < 0 || g >= p.groups) return float_of(0x7FC00000u);
  }
  const int64_t zero_words = p.out * p.bits / 32;
  const uint32_t q = streamed_value(p.qweight + o, p.out, i, p.bits);
  const uint32_t stored = streamed_value(p.qzeros + g * zero_words, 1, o, p.bits);
  const auto zero = static_cast<float>((stored + 1) & field_mask(p.bits));
  return mul_x86(sub_x86(static_cast<float>(q), zero),
                 load_f32(p.scales_dtype, p.scales, static_cast<uint64_t>(g * p.out + o)));
}

// AWQ's nibble of output column 8c + w within word c (word_packing.hpp's kAwqNibbleOf).
BALLAST_HD int awq_nibble(int64_t w) { return static_cast<int>(w / 2 + (w % 2) * 4); }

BALLAST_HD float awq_element(const AwqParts& p, int64_t o, int64_t i) {
  const int64_t words = p.out / 8;
  const int64_t g = i / (p.in / p.groups);
  const int shift = 4 * awq_nibble(o % 8);
  const uint32_t q = (p.qweight[i * words + o / 8] >> shift) & 0xFu;
  const uint32_t zero = (p.qzeros[g * words + o / 8] >> shift) & 0xFu;
  return mul_x86(sub_x86(static_cast<float>(q), static_cast<float>(zero)),
                 load_f32(p.scales_dtype, p.scales, static_cast<uint64_t>(g * p.out + o)));
}

BALLAST_HD float fp8_element(const Fp8Parts& p, int64_t o, int64_t i) {
  const uint8_t code = p.qweight[o * p.in + i];
  const float value = p.qweight_dtype == DType::f8_e5m2 ? minifloat_to_f32<E5M2>(code)
                                                        : minifloat_to_f32<E4M3>(code);
  const auto k = static_cast<uint64_t>((o / p.row_block) * p.scale_cols + i / p.col_block);
  return mul_x86(value, load_f32(p.scale_dtype, p.scale, k));
}

BALLAST_HD float int8_element(const Int8Parts& p, int64_t o, int64_t i) {
  const int64_t k = o * p.in + i;
  const float q = p.qweight_dtype == DType::u8
                      ? static_cast<float>(static_cast<const uint8_t*>(p.qweight)[k])
                      : static_cast<float>(static_cast<const int8_t*>(p.qweight)[k]);
  const float zero = p.qzeros != nullptr ? static_cast<float>(p.qzeros[o]) : 0.0f;
  return mul_x86(sub_x86(q, zero), load_f32(p.scales_dtype, p.scales, static_cast<uint64_t>(o)));
}

BALLAST_HD float int4_element(const Int4Parts& p, int64_t o, int64_t i) {
  const uint8_t byte = p.qweight[o * (p.in / 2) + i / 2];
  const int code = i % 2 == 0 ? byte & 0xF : byte >> 4;
  const auto g = static_cast<uint64_t>(o * p.groups + i / (p.in / p.groups));
  return mul_x86(sub_x86(static_cast<float>(code), static_cast<float>(p.zeros[g])),
                 load_f32(p.scales_dtype, p.scales, g));
}

// What one thread of a dequantization kernel does: element k of the row-major [out, in]
// weight, computed by Element and stored as element k of dst in dtype `to`.
template <typename Parts, float (*Element)(const Parts&, int64_t, int64_t)>
BALLAST_HD void dequantize_dense_element(const Parts& parts, DType to, void* dst, uint64_t k) {
  const auto in = static_cast<uint64_t>(parts.in);
  store_f32(to, dst, k, Element(parts, static_cast<int64_t>(k / in), static_cast<int64_t>(k % in)));
}

}  // namespace ballast::cuda
