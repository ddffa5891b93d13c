// ggml block dequantization kernels (see ggml_dequant.hpp). Each kernel turns one block into
// its elements with the same float operations, in the same order, as ggml's reference code;
// the translation unit is built without FMA contraction (ISO C++ mode), so results are exact.
#include "transform/ggml_dequant.hpp"

#include <fmt/format.h>
#include <array>
#include <bit>
#include <cstdint>

#include "ballast/error.hpp"

namespace ballast {
namespace {

// --- helpers ---------------------------------------------------------------------------------

// Exact IEEE binary16 -> binary32 (every half value, subnormals, infinities and NaNs).
inline float half(const uint8_t* p) {
  const uint32_t h = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8;
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | man << 13);
  if (exp != 0) return std::bit_cast<float>(sign | (exp + 112) << 23 | man << 13);
  const float v = static_cast<float>(man) * 0x1p-24f;  // zero or subnormal, exact
  return sign ? -v : v;
}

inline uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

inline float f(int v) { return static_cast<float>(v); }

// ggml's E8M0 scale halved (kvalues_mxfp4 holds doubled E2M1 values): 2^(e - 128).
inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  return std::bit_cast<float>(bits);
}

constexpr std::array<int8_t, 16> kIq4nl = {-127, -104, -83, -65, -49, -35, -22, -10,
                                           1,    13,   25,  38,  53,  69,  89,  113};
constexpr std::array<int8_t, 16> kMxfp4 = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 6-bit scale and min j of a q4_k / q5_k block (ggml's get_scale_min_k4).
inline void scale_min_k4(int j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// --- 32-element blocks -----------------------------------------------------------------------

// q4_0: f16 d, 16 bytes of nibbles; x = (q - 8) * d. Low nibbles are elements 0..15.
void q4_0(const uint8_t* b, float* y) {
  const float d = half(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = f((qs[j] & 0xF) - 8) * d;
    y[j + 16] = f((qs[j] >> 4) - 8) * d;
  }
}

// q4_1: f16 d, f16 m, 16 bytes of nibbles; x = q * d + m.
void q4_1(const uint8_t* b, float* y) {
  const float d = half(b), m = half(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = f(qs[j] & 0xF) * d + m;
    y[j + 16] = f(qs[j] >> 4) * d + m;
  }
}

// q5_0: f16 d, u32 of fifth bits, 16 bytes of nibbles; x = (q - 16) * d.
void q5_0(const uint8_t* b, float* y) {
  const float d = half(b);
  const uint32_t qh = le32(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10);
    const int h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
    y[j] = f(((qs[j] & 0xF) | h0) - 16) * d;
    y[j + 16] = f(((qs[j] >> 4) | h1) - 16) * d;
  }
}

// q5_1: f16 d, f16 m, u32 of fifth bits, 16 bytes of nibbles; x = q * d + m.
void q5_1(const uint8_t* b, float* y) {
  const float d = half(b), m = half(b + 2);
  const uint32_t qh = le32(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10);
    const int h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
    y[j] = f((qs[j] & 0xF) | h0) * d + m;
    y[j + 16] = f((qs[j] >> 4) | h1) * d + m;
  }
}

// q8_0: f16 d, 32 signed bytes; x = q * d.
void q8_0(const uint8_t* b, float* y) {
  const float d = half(b);
  const int8_t* qs = reinterpret_cast<const int8_t*>(b + 2);
  for (int j = 0; j < 32; ++j) y[j] = f(qs[j]) * d;
}

// iq4_nl: f16 d, 16 bytes of nibbles indexing a non-linear table; x = d * table[q].
void iq4_nl(const uint8_t* b, float* y) {
  const float d = half(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * f(kIq4nl[qs[j] & 0xF]);
    y[j + 16] = d * f(kIq4nl[qs[j] >> 4]);
  }
}

// mxfp4: E8M0 exponent, 16 bytes of E2M1 nibbles; x = e2m1(q) * 2^(e - 127).
void mxfp4(const uint8_t* b, float* y) {
  const float d = e8m0_half(b[0]);
  const uint8_t* qs = b + 1;
  for (int j = 0; j < 16; ++j) {
    y[j] = f(kMxfp4[qs[j] & 0xF]) * d;
    y[j + 16] = f(kMxfp4[qs[j] >> 4]) * d;
  }
}

// --- 256-element super-blocks ----------------------------------------------------------------

// q2_k: 16 bytes of 4-bit scale|min pairs, 64 bytes of 2-bit quants, f16 d, f16 dmin;
// x = d * scale * q - dmin * min, in 16 groups of 16.
void q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* q = b + 16;
  const float d = half(b + 80), dmin = half(b + 82);
  int is = 0;
  for (int n = 0; n < 256; n += 128, q += 32) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half_group = 0; half_group < 32; half_group += 16) {
        const uint8_t sc = scales[is++];
        const float dl = d * f(sc & 0xF), ml = dmin * f(sc >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * f((q[l + half_group] >> shift) & 3) - ml;
      }
    }
  }
}

// q3_k: 32 bytes of high bits, 64 bytes of 2-bit quants, 12 bytes of 6-bit scales, f16 d;
// x = d * (scale - 32) * (q - (high bit ? 0 : 4)), in 16 groups of 16.
void q3_k(const uint8_t* b, float* y) {
  const uint8_t* hm = b;
  const uint8_t* q = b + 32;
  const uint8_t* packed = b + 96;
  const float d_all = half(b + 108);
  int scales[16];
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? packed[j] & 0xF : packed[j - 8] >> 4;
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    scales[j] = (low | high << 4) - 32;
  }
  int is = 0;
  uint8_t m = 1;
  for (int n = 0; n < 256; n += 128, q += 32) {
    for (int shift = 0; shift < 8; shift += 2, m = static_cast<uint8_t>(m << 1)) {
      for (int half_group = 0; half_group < 32; half_group += 16) {
        const float dl = d_all * f(scales[is++]);
        for (int l = 0; l < 16; ++l) {
          const int k = l + half_group;
          *y++ = dl * f(((q[k] >> shift) & 3) - ((hm[k] & m) ? 0 : 4));
        }
      }
    }
  }
}

// q4_k: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles;
// x = d * scale * q - dmin * min, in 8 groups of 32.
void q4_k(const uint8_t* b, float* y) {
  const float d = half(b), dmin = half(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  for (int is = 0; is < 8; is += 2, q += 32) {
    int sc, m;
    scale_min_k4(is, scales, sc, m);
    const float d1 = d * f(sc), m1 = dmin * f(m);
    scale_min_k4(is + 1, scales, sc, m);
    const float d2 = d * f(sc), m2 = dmin * f(m);
    for (int l = 0; l < 32; ++l) *y++ = d1 * f(q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * f(q[l] >> 4) - m2;
  }
}

// q5_k: as q4_k plus 32 bytes of fifth bits (bit 2g and 2g+1 of byte l for groups 2g, 2g+1).
void q5_k(const uint8_t* b, float* y) {
  const float d = half(b), dmin = half(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* ql = b + 48;
  uint8_t u1 = 1, u2 = 2;
  for (int is = 0; is < 8; is += 2, ql += 32) {
    int sc, m;
    scale_min_k4(is, scales, sc, m);
    const float d1 = d * f(sc), m1 = dmin * f(m);
    scale_min_k4(is + 1, scales, sc, m);
    const float d2 = d * f(sc), m2 = dmin * f(m);
    for (int l = 0; l < 32; ++l) *y++ = d1 * f((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * f((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    u1 = static_cast<uint8_t>(u1 << 2);
    u2 = static_cast<uint8_t>(u2 << 2);
  }
}

// q6_k: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 signed 8-bit scales, f16 d;
// x = d * scale * (q - 32), in 16 groups of 16.
void q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half(b + 208);
  for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * f(sc[is]) * f(q1);
      y[l + 32] = d * f(sc[is + 2]) * f(q2);
      y[l + 64] = d * f(sc[is + 4]) * f(q3);
      y[l + 96] = d * f(sc[is + 6]) * f(q4);
    }
  }
}

// q8_k: f32 d, 256 signed bytes, 16 i16 group sums (unused here); x = d * q.
void q8_k(const uint8_t* b, float* y) {
  const float d = std::bit_cast<float>(le32(b));
  const int8_t* qs = reinterpret_cast<const int8_t*>(b + 4);
  for (int j = 0; j < 256; ++j) y[j] = d * f(qs[j]);
}

// tq1_0: 48 bytes of five base-3 digits each, 4 bytes of four digits each, f16 d;
// x = (digit - 1) * d. A byte holds its digits as a fixed-point fraction of 3^5.
void tq1_0(const uint8_t* b, float* y) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const uint8_t* qs = b;
  const uint8_t* qh = b + 48;
  const float d = half(b + 52);
  auto digit = [](uint8_t byte, int n) {
    const uint8_t q = static_cast<uint8_t>(byte * kPow3[n]);
    return (static_cast<uint16_t>(q) * 3) >> 8;
  };
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 32; ++m) *y++ = f(digit(qs[m], n) - 1) * d;
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 16; ++m) *y++ = f(digit(qs[32 + m], n) - 1) * d;
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 4; ++j) *y++ = f(digit(qh[j], n) - 1) * d;
}

// tq2_0: 64 bytes of 2-bit digits, f16 d; x = (digit - 1) * d.
void tq2_0(const uint8_t* b, float* y) {
  const float d = half(b + 64);
  for (int j = 0; j < 64; j += 32)
    for (int l = 0; l < 4; ++l)
      for (int m = 0; m < 32; ++m) *y++ = f(((b[j + m] >> (2 * l)) & 3) - 1) * d;
}

// iq4_xs: f16 d, u16 of high scale bits, 4 bytes of low scale nibbles, 128 bytes of nibbles;
// x = d * (scale - 32) * table[q], in 8 groups of 32.
void iq4_xs(const uint8_t* b, float* y) {
  const float d = half(b);
  const uint32_t scales_h = static_cast<uint32_t>(b[2]) | static_cast<uint32_t>(b[3]) << 8;
  const uint8_t* scales_l = b + 4;
  const uint8_t* qs = b + 8;
  for (int ib = 0; ib < 8; ++ib, y += 32, qs += 16) {
    const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) |
                   static_cast<int>(((scales_h >> (2 * ib)) & 3) << 4);
    const float dl = d * f(ls - 32);
    for (int j = 0; j < 16; ++j) {
      y[j] = dl * f(kIq4nl[qs[j] & 0xF]);
      y[j + 16] = dl * f(kIq4nl[qs[j] >> 4]);
    }
  }
}

// --- dispatch --------------------------------------------------------------------------------

using Kernel = void (*)(const uint8_t*, float*);

template <Kernel K>
void run(const uint8_t* src, float* out, size_t blocks, uint32_t block_bytes,
         uint32_t block_elements) {
  for (size_t i = 0; i < blocks; ++i) K(src + i * block_bytes, out + i * block_elements);
}

using Runner = void (*)(const uint8_t*, float*, size_t, uint32_t, uint32_t);

Runner runner_for(DType type) {
  switch (type) {
    case DType::q4_0: return run<q4_0>;
    case DType::q4_1: return run<q4_1>;
    case DType::q5_0: return run<q5_0>;
    case DType::q5_1: return run<q5_1>;
    case DType::q8_0: return run<q8_0>;
    case DType::q2_k: return run<q2_k>;
    case DType::q3_k: return run<q3_k>;
    case DType::q4_k: return run<q4_k>;
    case DType::q5_k: return run<q5_k>;
    case DType::q6_k: return run<q6_k>;
    case DType::q8_k: return run<q8_k>;
    case DType::tq1_0: return run<tq1_0>;
    case DType::tq2_0: return run<tq2_0>;
    case DType::iq4_nl: return run<iq4_nl>;
    case DType::iq4_xs: return run<iq4_xs>;
    case DType::mxfp4: return run<mxfp4>;
    default: return nullptr;
  }
}

}  // namespace

bool ggml_can_dequantize(DType type) { return runner_for(type) != nullptr; }

void ggml_dequantize_to_f32(DType type, std::span<const std::byte> blocks, std::span<float> out) {
  const Runner runner = runner_for(type);
  if (!runner)
    throw Error(ErrorCode::unsupported,
                fmt::format("no dequantization kernel for {}", dtype_name(type)));
  const DTypeInfo& info = dtype_info(type);
  const size_t n_blocks = out.size() / info.block_elements;
  if (out.size() % info.block_elements != 0 || blocks.size() / info.block_bytes != n_blocks ||
      blocks.size() % info.block_bytes != 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("cannot dequantize {} bytes of {} into {} f32 elements: expected {} "
                            "bytes for whole {}-element blocks",
                            blocks.size(), dtype_name(type), out.size(),
                            n_blocks * info.block_bytes, info.block_elements));
  runner(reinterpret_cast<const uint8_t*>(blocks.data()), out.data(), n_blocks, info.block_bytes,
         info.block_elements);
}

}  // namespace ballast
