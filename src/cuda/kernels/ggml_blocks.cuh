// GGUF block dequantization one element at a time: ggml_element<T>(block, j) is element j of
// one block of type T, computed with the float operations, in the order, of ggml_dequant.cpp
// (ggml's reference dequantize_row_*), so a GPU thread per element gives the CPU's bits (the
// kernels are compiled with --fmad=false, as the CPU file is without FMA contraction, and the
// *_x86 operations give a NaN scale's NaN as the CPU does). Shared
// by the device kernels and tests/cuda_kernels_math_test.cpp (see element_math.cuh).
#pragma once

#include <cstdint>
#include <type_traits>

#include "ballast/dtype.hpp"
#include "cuda/kernels/element_math.cuh"

namespace ballast::cuda {

// Elements and bytes of one block (dtype.hpp's block_elements / block_bytes).
template <DType T>
struct GgmlBlock;
template <uint32_t Elements, uint32_t Bytes>
struct GgmlBlockOf {
  static constexpr uint32_t elements = Elements;
  static constexpr uint32_t bytes = Bytes;
};
template <>
struct GgmlBlock<DType::q4_0> : GgmlBlockOf<32, 18> {};
template <>
struct GgmlBlock<DType::q4_1> : GgmlBlockOf<32, 20> {};
template <>
struct GgmlBlock<DType::q5_0> : GgmlBlockOf<32, 22> {};
template <>
struct GgmlBlock<DType::q5_1> : GgmlBlockOf<32, 24> {};
template <>
struct GgmlBlock<DType::q8_0> : GgmlBlockOf<32, 34> {};
template <>
struct GgmlBlock<DType::iq4_nl> : GgmlBlockOf<32, 18> {};
template <>
struct GgmlBlock<DType::mxfp4> : GgmlBlockOf<32, 17> {};
template <>
struct GgmlBlock<DType::q2_k> : GgmlBlockOf<256, 84> {};
template <>
struct GgmlBlock<DType::q3_k> : GgmlBlockOf<256, 110> {};
template <>
struct GgmlBlock<DType::q4_k> : GgmlBlockOf<256, 144> {};
template <>
struct GgmlBlock<DType::q5_k> : GgmlBlockOf<256, 176> {};
template <>
struct GgmlBlock<DType::q6_k> : GgmlBlockOf<256, 210> {};
template <>
struct GgmlBlock<DType::q8_k> : GgmlBlockOf<256, 292> {};
template <>
struct GgmlBlock<DType::tq1_0> : GgmlBlockOf<256, 54> {};
template <>
struct GgmlBlock<DType::tq2_0> : GgmlBlockOf<256, 66> {};
template <>
struct GgmlBlock<DType::iq4_xs> : GgmlBlockOf<256, 136> {};

// --- helpers -----------------------------------------------------------------------------------

BALLAST_HD float half_at(const uint8_t* p) {
  return f16_to_f32(static_cast<uint16_t>(p[0] | p[1] << 8));
}

BALLAST_HD uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

BALLAST_HD float fl(int v) { return static_cast<float>(v); }

// A 16-entry table of signed bytes held in two 64-bit constants (entry k in byte k), so that
// device code reads it from registers rather than memory.
struct Table16 {
  uint64_t low;
  uint64_t high;
};
constexpr uint64_t pack8(int a0, int a1, int a2, int a3, int a4, int a5, int a6, int a7) {
  const int v[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
  uint64_t packed = 0;
  for (int k = 0; k < 8; ++k) packed |= static_cast<uint64_t>(static_cast<uint8_t>(v[k])) << 8 * k;
  return packed;
}
BALLAST_HD int table_entry(uint64_t low, uint64_t high, uint32_t k) {
  const uint64_t word = k < 8 ? low : high;
  return static_cast<int8_t>(static_cast<uint8_t>(word >> 8 * (k & 7)));
}
// ggml's kvalues_iq4nl and kvalues_mxfp4 (doubled E2M1 values).
constexpr uint64_t kIq4nlLow = pack8(-127, -104, -83, -65, -49, -35, -22, -10);
constexpr uint64_t kIq4nlHigh = pack8(1, 13, 25, 38, 53, 69, 89, 113);
constexpr uint64_t kMxfp4Low = pack8(0, 1, 2, 3, 4, 6, 8, 12);
constexpr uint64_t kMxfp4High = pack8(0, -1, -2, -3, -4, -6, -8, -12);

// ggml's E8M0 scale halved: 2^(e - 128).
BALLAST_HD float e8m0_half(uint8_t e) {
  return float_of(e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23);
}

// 6-bit scale and min j of a q4_k / q5_k block (ggml's get_scale_min_k4).
BALLAST_HD void scale_min_k4(uint32_t j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Nibble j of 32 held as low nibbles (0..15) then high nibbles (16..31) of 16 bytes.
BALLAST_HD int split_nibble(const uint8_t* qs, uint32_t j) {
  return j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4;
}

// Fifth bit of element j of a q5_0 / q5_1 block, as 0 or 16.
BALLAST_HD int fifth_bit(uint32_t qh, uint32_t j) {
  return j < 16 ? static_cast<int>(((qh >> j) << 4) & 0x10)
                : static_cast<int>((qh >> (j - 16 + 12)) & 0x10);
}

// Base-3 digit n of a tq1_0 byte (a fixed-point fraction of 3^5).
BALLAST_HD int ternary_digit(uint8_t byte, uint32_t n) {
  const uint32_t pow3 = n == 0 ? 1 : n == 1 ? 3 : n == 2 ? 9 : n == 3 ? 27 : 81;
  const auto q = static_cast<uint8_t>(byte * pow3);
  return (static_cast<uint16_t>(q) * 3) >> 8;
}

// --- element j of one block --------------------------------------------------------------------

template <DType T>
BALLAST_HD float ggml_element(const uint8_t* b, uint32_t j) {
  if constexpr (T == DType::q4_0) {
    return mul_x86(fl(split_nibble(b + 2, j) - 8), half_at(b));
  } else if constexpr (T == DType::q4_1) {
    return add_x86(mul_x86(fl(split_nibble(b + 4, j)), half_at(b)), half_at(b + 2));
  } else if constexpr (T == DType::q5_0) {
    return mul_x86(fl((split_nibble(b + 6, j) | fifth_bit(le32(b + 2), j)) - 16), half_at(b));
  } else if constexpr (T == DType::q5_1) {
    const int q = split_nibble(b + 8, j) | fifth_bit(le32(b + 4), j);
    return add_x86(mul_x86(fl(q), half_at(b)), half_at(b + 2));
  } else if constexpr (T == DType::q8_0) {
    return mul_x86(fl(static_cast<int8_t>(b[2 + j])), half_at(b));
  } else if constexpr (T == DType::iq4_nl) {
    return mul_x86(half_at(b), fl(table_entry(kIq4nlLow, kIq4nlHigh, split_nibble(b + 2, j))));
  } else if constexpr (T == DType::mxfp4) {
    return mul_x86(fl(table_entry(kMxfp4Low, kMxfp4High, split_nibble(b + 1, j))), e8m0_half(b[0]));
  } else if constexpr (T == DType::q2_k) {
    // Halves of 128: four 2-bit planes of 32 bytes, each two groups of 16 with a scale|min.
    const uint32_t r = j % 128, plane = r / 32, k = j / 128 * 32 + r % 32;
    const uint8_t sc = b[j / 128 * 8 + plane * 2 + (r % 32) / 16];
    const float dl = mul_x86(half_at(b + 80), fl(sc & 0xF));
    const float ml = mul_x86(half_at(b + 82), fl(sc >> 4));
    return sub_x86(mul_x86(dl, fl((b[16 + k] >> 2 * plane) & 3)), ml);
  } else if constexpr (T == DType::q3_k) {
    const uint8_t* packed = b + 96;
    const uint32_t r = j % 128, plane = r / 32, k = r % 32;
    const uint32_t is = j / 128 * 8 + plane * 2 + k / 16;
    const int low = is < 8 ? packed[is] & 0xF : packed[is - 8] >> 4;
    const int high = (packed[8 + is % 4] >> (2 * (is / 4))) & 3;
    const float dl = mul_x86(half_at(b + 108), fl((low | high << 4) - 32));
    const uint32_t m = 1u << (j / 128 * 4 + plane);
    const uint8_t q = b[32 + j / 128 * 32 + k];
    return mul_x86(dl, fl(((q >> 2 * plane) & 3) - ((b[k] & m) ? 0 : 4)));
  } else if constexpr (T == DType::q4_k || T == DType::q5_k) {
    // Pairs of groups of 32 share 32 bytes: low nibbles, then high nibbles.
    const uint32_t pair = j / 64, l = j % 32;
    const bool upper = j % 64 >= 32;
    int sc, m;
    scale_min_k4(pair * 2 + (upper ? 1 : 0), b + 4, sc, m);
    const float d = mul_x86(half_at(b), fl(sc)), min = mul_x86(half_at(b + 2), fl(m));
    if constexpr (T == DType::q4_k) {
      const uint8_t byte = b[16 + pair * 32 + l];
      return sub_x86(mul_x86(d, fl(upper ? byte >> 4 : byte & 0xF)), min);
    } else {
      const uint8_t byte = b[48 + pair * 32 + l];
      const uint32_t bit = 1u << (pair * 2 + (upper ? 1 : 0));
      const int q = (upper ? byte >> 4 : byte & 0xF) + (b[16 + l] & bit ? 16 : 0);
      return sub_x86(mul_x86(d, fl(q)), min);
    }
  } else if constexpr (T == DType::q6_k) {
    const uint32_t n = j / 128, quarter = (j % 128) / 32, l = j % 32;
    const uint8_t* ql = b + n * 64;
    const uint8_t qh = b[128 + n * 32 + l];
    const uint8_t low = ql[l + (quarter & 1) * 32];
    const int q = ((quarter < 2 ? low & 0xF : low >> 4) | ((qh >> 2 * quarter) & 3) << 4) - 32;
    const auto sc = static_cast<int8_t>(b[192 + n * 8 + l / 16 + quarter * 2]);
    return mul_x86(mul_x86(half_at(b + 208), fl(sc)), fl(q));
  } else if constexpr (T == DType::q8_k) {
    return mul_x86(float_of(le32(b)), fl(static_cast<int8_t>(b[4 + j])));
  } else if constexpr (T == DType::tq1_0) {
    int digit;
    if (j < 160)
      digit = ternary_digit(b[j % 32], j / 32);
    else if (j < 240)
      digit = ternary_digit(b[32 + (j - 160) % 16], (j - 160) / 16);
    else
      digit = ternary_digit(b[48 + (j - 240) % 4], (j - 240) / 4);
    return mul_x86(fl(digit - 1), half_at(b + 52));
  } else if constexpr (T == DType::tq2_0) {
    const uint32_t r = j % 128;
    return mul_x86(fl(((b[j / 128 * 32 + r % 32] >> 2 * (r / 32)) & 3) - 1), half_at(b + 64));
  } else {
    static_assert(T == DType::iq4_xs, "no element kernel for this block type");
    const uint32_t ib = j / 32;
    const uint32_t scales_h = static_cast<uint32_t>(b[2]) | static_cast<uint32_t>(b[3]) << 8;
    const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) |
                   static_cast<int>(((scales_h >> (2 * ib)) & 3) << 4);
    const float dl = mul_x86(half_at(b), fl(ls - 32));
    return mul_x86(dl,
                   fl(table_entry(kIq4nlLow, kIq4nlHigh, split_nibble(b + 8 + ib * 16, j % 32))));
  }
}

// What one thread of the GGUF kernel does: element i of the tensor whose blocks start at
// `blocks`, stored as element i of dst in dtype `to` (an is_cast_target).
template <DType T>
BALLAST_HD void ggml_dequantize_element(DType to, const uint8_t* blocks, void* dst, uint64_t i) {
  using Block = GgmlBlock<T>;
  const uint8_t* block = blocks + i / Block::elements * Block::bytes;
  store_f32(to, dst, i, ggml_element<T>(block, static_cast<uint32_t>(i % Block::elements)));
}

// Calls f(std::integral_constant<DType, T>{}) for a block type with an element kernel; false
// for any other dtype. Host code.
template <typename F>
inline bool with_ggml_type(DType type, F&& f) {
  switch (type) {
#define BALLAST_GGML_CASE(T) \
  case DType::T: f(std::integral_constant<DType, DType::T>{}); return true;
    BALLAST_GGML_CASE(q4_0)
    BALLAST_GGML_CASE(q4_1)
    BALLAST_GGML_CASE(q5_0)
    BALLAST_GGML_CASE(q5_1)
    BALLAST_GGML_CASE(q8_0)
    BALLAST_GGML_CASE(q2_k)
    BALLAST_GGML_CASE(q3_k)
    BALLAST_GGML_CASE(q4_k)
    BALLAST_GGML_CASE(q5_k)
    BALLAST_GGML_CASE(q6_k)
    BALLAST_GGML_CASE(q8_k)
    BALLAST_GGML_CASE(tq1_0)
    BALLAST_GGML_CASE(tq2_0)
    BALLAST_GGML_CASE(iq4_nl)
    BALLAST_GGML_CASE(iq4_xs)
    BALLAST_GGML_CASE(mxfp4)
#undef BALLAST_GGML_CASE
    default: return false;
  }
}

}  // namespace ballast::cuda
