// The element math of the device kernels: float format conversions, the dtype casts and the
// scale step, written once as functions nvcc compiles for the GPU and any C++20 compiler
// compiles for the CPU. tests/cuda_kernels_math_test.cpp runs the CPU build against
// src/transform (cast.cpp, float_bits.hpp) bit for bit; the .cu kernels are grid loops over
// these functions. Bit manipulation stands in for the library calls (frexp, ldexp, signbit)
// the CPU path uses, and NaNs travel as x86 hardware moves them (payload kept, quiet bit set,
// the negative default NaN for one made from numbers), so the GPU gives the CPU's bits.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ballast/dtype.hpp"

#if defined(__CUDACC__)
#define BALLAST_HD __host__ __device__ inline
#else
#define BALLAST_HD inline
#endif

namespace ballast::cuda {

// --- bits ------------------------------------------------------------------------------------

BALLAST_HD uint32_t bits_of(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

BALLAST_HD float float_of(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

BALLAST_HD uint64_t bits_of(double d) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(d));
#else
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
#endif
}

BALLAST_HD double double_of(uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
#endif
}

BALLAST_HD bool is_nan(float f) { return (bits_of(f) & 0x7FFFFFFFu) > 0x7F800000u; }
BALLAST_HD bool is_nan(double d) {
  return (bits_of(d) & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
}

// Round to the nearest integer, ties to even (std::nearbyint in the default rounding mode).
BALLAST_HD float round_even(float f) {
#if defined(__CUDA_ARCH__)
  return rintf(f);
#else
  return std::nearbyint(f);
#endif
}

// --- f32 <-> f64 with x86's NaN rules ----------------------------------------------------------

BALLAST_HD double widen(float f) {
  if (!is_nan(f)) return static_cast<double>(f);
  const uint32_t b = bits_of(f) | 0x00400000u;  // quiet
  return double_of(static_cast<uint64_t>(b >> 31) << 63 | 0x7FF0000000000000ull |
                   static_cast<uint64_t>(b & 0x007FFFFFu) << 29);
}

BALLAST_HD float narrow(double d) {
  if (!is_nan(d)) return static_cast<float>(d);
  const uint64_t b = bits_of(d);
  return float_of(static_cast<uint32_t>(b >> 63) << 31 | 0x7FC00000u |
                  static_cast<uint32_t>((b >> 29) & 0x007FFFFFu));
}

// a * b, a + b and a - b with the NaNs x86 SSE gives (the CPU path's bits; a GPU gives one
// canonical NaN instead): a NaN operand comes out quieted, the first one when both are, and a
// NaN made from numbers (inf * 0, inf - inf) is the negative default NaN.
BALLAST_HD float quieted(float v) { return float_of(bits_of(v) | 0x00400000u); }
BALLAST_HD double quieted(double v) { return double_of(bits_of(v) | 0x0008000000000000ull); }
BALLAST_HD float default_nan(float) { return float_of(0xFFC00000u); }
BALLAST_HD double default_nan(double) { return double_of(0xFFF8000000000000ull); }

template <typename F>
BALLAST_HD F x86_result(F a, F b, F result) {
  if (is_nan(a)) return quieted(a);
  if (is_nan(b)) return quieted(b);
  return is_nan(result) ? default_nan(result) : result;
}
template <typename F>
BALLAST_HD F mul_x86(F a, F b) {
  return x86_result(a, b, a * b);
}
template <typename F>
BALLAST_HD F add_x86(F a, F b) {
  return x86_result(a, b, a + b);
}
template <typename F>
BALLAST_HD F sub_x86(F a, F b) {
  return x86_result(a, b, a - b);
}

// --- f16 and bf16 (float_bits.hpp) -------------------------------------------------------------

BALLAST_HD float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0x1F) return float_of(sign | 0x7F800000u | man << 13);
  if (exp != 0) return float_of(sign | (exp + 112) << 23 | man << 13);
  return float_of(sign | bits_of(static_cast<float>(man) * 0x1p-24f));  // zero or subnormal
}

BALLAST_HD uint16_t f32_to_f16(float f) {
  const uint32_t x = bits_of(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to infinity
  if (abs < 0x38800000u) {  // f16 subnormal or zero: adding 0.5 rounds at the right bit
    const float magic = float_of(abs) + 0.5f;
    return static_cast<uint16_t>(sign | (bits_of(magic) - 0x3F000000u));
  }
  const uint32_t rounded = abs + 0x0FFFu + ((abs >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

BALLAST_HD float bf16_to_f32(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }

BALLAST_HD uint16_t f32_to_bf16(float f) {
  const uint32_t x = bits_of(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

// --- FP8: OCP e4m3fn (saturating, no infinity) and e5m2 (IEEE-like) ---------------------------

template <int ExpBits, int ManBits, bool HasInf>
struct MiniFormat {
  static constexpr int exp_bits = ExpBits;
  static constexpr int man_bits = ManBits;
  static constexpr int bias = (1 << (ExpBits - 1)) - 1;
  static constexpr bool has_inf = HasInf;
  static constexpr uint32_t exp_max = (1u << ExpBits) - 1;
  static constexpr uint32_t man_mask = (1u << ManBits) - 1;
  static constexpr uint32_t nan_code =
      HasInf ? exp_max << ManBits | 1u << (ManBits - 1) : exp_max << ManBits | man_mask;
  static constexpr uint32_t inf_code = exp_max << ManBits;
  static constexpr uint32_t max_code =
      HasInf ? (exp_max - 1) << ManBits | man_mask : exp_max << ManBits | (man_mask - 1);
  // e4m3fn saturates to the largest finite value; e5m2 overflows to infinity.
  static constexpr uint32_t overflow_code = HasInf ? inf_code : max_code;
};
using E4M3 = MiniFormat<4, 3, false>;
using E5M2 = MiniFormat<5, 2, true>;

template <typename Format>
BALLAST_HD float minifloat_to_f32(uint8_t v) {
  const uint32_t sign = static_cast<uint32_t>(v >> 7) << 31;
  const uint32_t exp = (v >> Format::man_bits) & Format::exp_max;
  const uint32_t man = v & Format::man_mask;
  if (exp == Format::exp_max && (Format::has_inf || man == Format::man_mask))
    return float_of(sign | (Format::has_inf && man == 0 ? 0x7F800000u : 0x7FC00000u));
  if (exp == 0) {  // subnormal: man * 2^(1 - bias - man_bits), exact
    const float quantum =
        float_of(static_cast<uint32_t>(128 - Format::bias - Format::man_bits) << 23);
    return float_of(sign | bits_of(static_cast<float>(man) * quantum));
  }
  return float_of(sign | (exp - Format::bias + 127) << 23 | man << (23 - Format::man_bits));
}

template <typename Format>
BALLAST_HD uint8_t f32_to_minifloat(float f) {
  const uint32_t x = bits_of(f);
  const uint32_t sign = (x >> 31) << 7;
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint8_t>(sign | Format::nan_code);
  if (abs == 0x7F800000u) return static_cast<uint8_t>(sign | Format::overflow_code);
  uint32_t code;
  if (abs < static_cast<uint32_t>(128 - Format::bias) << 23) {  // below the smallest normal
    const float units = float_of(static_cast<uint32_t>(126 + Format::bias + Format::man_bits)
                                 << 23);  // 2^(bias - 1 + man_bits): one subnormal step
    code = static_cast<uint32_t>(round_even(float_of(abs) * units));
  } else {  // round the mantissa to man_bits, ties to even; a carry moves into the exponent
    constexpr int shift = 23 - Format::man_bits;
    const uint32_t rounded = (abs + (1u << (shift - 1)) - 1 + ((abs >> shift) & 1u)) >> shift;
    code = rounded - (static_cast<uint32_t>(127 - Format::bias) << Format::man_bits);
    if (code > Format::max_code) return static_cast<uint8_t>(sign | Format::overflow_code);
  }
  return static_cast<uint8_t>(sign | code);
}

// --- storage types -----------------------------------------------------------------------------

// How a dtype is stored (Bits) and computed with (Value), as cast.cpp's tags: narrow floats
// compute in f32, integers in their own type, bool as bool.
template <DType D>
struct Storage;

template <typename B, typename V>
struct StorageOf {
  using Bits = B;
  using Value = V;
};
template <>
struct Storage<DType::f64> : StorageOf<double, double> {};
template <>
struct Storage<DType::f32> : StorageOf<float, float> {};
template <>
struct Storage<DType::f16> : StorageOf<uint16_t, float> {};
template <>
struct Storage<DType::bf16> : StorageOf<uint16_t, float> {};
template <>
struct Storage<DType::f8_e4m3> : StorageOf<uint8_t, float> {};
template <>
struct Storage<DType::f8_e5m2> : StorageOf<uint8_t, float> {};
template <>
struct Storage<DType::i64> : StorageOf<int64_t, int64_t> {};
template <>
struct Storage<DType::i32> : StorageOf<int32_t, int32_t> {};
template <>
struct Storage<DType::i16> : StorageOf<int16_t, int16_t> {};
template <>
struct Storage<DType::i8> : StorageOf<int8_t, int8_t> {};
template <>
struct Storage<DType::u64> : StorageOf<uint64_t, uint64_t> {};
template <>
struct Storage<DType::u32> : StorageOf<uint32_t, uint32_t> {};
template <>
struct Storage<DType::u16> : StorageOf<uint16_t, uint16_t> {};
template <>
struct Storage<DType::u8> : StorageOf<uint8_t, uint8_t> {};
template <>
struct Storage<DType::boolean> : StorageOf<uint8_t, bool> {};

template <DType D>
BALLAST_HD typename Storage<D>::Value decode(typename Storage<D>::Bits b) {
  if constexpr (D == DType::f16)
    return f16_to_f32(b);
  else if constexpr (D == DType::bf16)
    return bf16_to_f32(b);
  else if constexpr (D == DType::f8_e4m3)
    return minifloat_to_f32<E4M3>(b);
  else if constexpr (D == DType::f8_e5m2)
    return minifloat_to_f32<E5M2>(b);
  else if constexpr (D == DType::boolean)
    return b != 0;
  else
    return b;
}

template <DType D>
BALLAST_HD typename Storage<D>::Bits encode(typename Storage<D>::Value v) {
  if constexpr (D == DType::f16)
    return f32_to_f16(v);
  else if constexpr (D == DType::bf16)
    return f32_to_bf16(v);
  else if constexpr (D == DType::f8_e4m3)
    return f32_to_minifloat<E4M3>(v);
  else if constexpr (D == DType::f8_e5m2)
    return f32_to_minifloat<E5M2>(v);
  else if constexpr (D == DType::boolean)
    return v ? 1 : 0;
  else
    return v;
}

// A value of any storage type as the float type F (float or double), as static_cast does on
// the CPU, with x86's NaN moves between f32 and f64.
template <typename F, typename V>
BALLAST_HD F to_float(V v) {
  if constexpr (std::is_same_v<V, float> && std::is_same_v<F, double>)
    return widen(v);
  else if constexpr (std::is_same_v<V, double> && std::is_same_v<F, float>)
    return narrow(v);
  else
    return static_cast<F>(v);
}

// The dtypes launch_cast writes: the float types with a Storage.
BALLAST_HD constexpr bool is_cast_target(DType d) {
  return d == DType::f64 || d == DType::f32 || d == DType::f16 || d == DType::bf16 ||
         d == DType::f8_e4m3 || d == DType::f8_e5m2;
}

// The dtypes launch_cast reads: every dtype with a Storage.
BALLAST_HD constexpr bool is_cast_source(DType d) {
  switch (d) {
    case DType::f64:
    case DType::f32:
    case DType::f16:
    case DType::bf16:
    case DType::f8_e4m3:
    case DType::f8_e5m2:
    case DType::i64:
    case DType::i32:
    case DType::i16:
    case DType::i8:
    case DType::u64:
    case DType::u32:
    case DType::u16:
    case DType::u8:
    case DType::boolean: return true;
    default: return false;
  }
}

// Bytes of one element of a cast source (0 for other dtypes).
BALLAST_HD constexpr uint32_t storage_bytes(DType d) {
  switch (d) {
    case DType::f64:
    case DType::i64:
    case DType::u64: return 8;
    case DType::f32:
    case DType::i32:
    case DType::u32: return 4;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
    case DType::u16: return 2;
    case DType::f8_e4m3:
    case DType::f8_e5m2:
    case DType::i8:
    case DType::u8:
    case DType::boolean: return 1;
    default: return 0;
  }
}

// Calls f(std::integral_constant<DType, D>{}) for a cast source D; false for other dtypes.
// Host code.
template <typename F>
inline bool with_cast_source(DType d, F&& f) {
  switch (d) {
#define BALLAST_CAST_CASE(D) \
  case DType::D: f(std::integral_constant<DType, DType::D>{}); return true;
    BALLAST_CAST_CASE(f64)
    BALLAST_CAST_CASE(f32)
    BALLAST_CAST_CASE(f16)
    BALLAST_CAST_CASE(bf16)
    BALLAST_CAST_CASE(f8_e4m3)
    BALLAST_CAST_CASE(f8_e5m2)
    BALLAST_CAST_CASE(i64)
    BALLAST_CAST_CASE(i32)
    BALLAST_CAST_CASE(i16)
    BALLAST_CAST_CASE(i8)
    BALLAST_CAST_CASE(u64)
    BALLAST_CAST_CASE(u32)
    BALLAST_CAST_CASE(u16)
    BALLAST_CAST_CASE(u8)
    BALLAST_CAST_CASE(boolean)
#undef BALLAST_CAST_CASE
    default: return false;
  }
}

// Element i of src (dtype From) cast to To and stored at element i of dst.
template <DType From, DType To>
BALLAST_HD void cast_element(const void* src, void* dst, uint64_t i) {
  using ToValue = typename Storage<To>::Value;
  const auto v = decode<From>(static_cast<const typename Storage<From>::Bits*>(src)[i]);
  static_cast<typename Storage<To>::Bits*>(dst)[i] = encode<To>(to_float<ToValue>(v));
}

// cast_element with the target chosen at run time; `to` is an is_cast_target dtype.
template <DType From>
BALLAST_HD void cast_element_to(DType to, const void* src, void* dst, uint64_t i) {
  switch (to) {
    case DType::f64: return cast_element<From, DType::f64>(src, dst, i);
    case DType::f32: return cast_element<From, DType::f32>(src, dst, i);
    case DType::f16: return cast_element<From, DType::f16>(src, dst, i);
    case DType::bf16: return cast_element<From, DType::bf16>(src, dst, i);
    case DType::f8_e4m3: return cast_element<From, DType::f8_e4m3>(src, dst, i);
    case DType::f8_e5m2: return cast_element<From, DType::f8_e5m2>(src, dst, i);
    default: return;
  }
}

// Element i of a float dtype (an is_cast_target) as f32, as cast_elements(dtype, f32) gives it.
BALLAST_HD float load_f32(DType dtype, const void* data, uint64_t i) {
  switch (dtype) {
    case DType::f64: return narrow(static_cast<const double*>(data)[i]);
    case DType::f32: return static_cast<const float*>(data)[i];
    case DType::f16: return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::f8_e4m3: return minifloat_to_f32<E4M3>(static_cast<const uint8_t*>(data)[i]);
    case DType::f8_e5m2: return minifloat_to_f32<E5M2>(static_cast<const uint8_t*>(data)[i]);
    default: return 0.0f;
  }
}

// Stores an f32 value as element i of dst in dtype to (an is_cast_target), as
// cast_elements(f32, to) does.
BALLAST_HD void store_f32(DType to, void* dst, uint64_t i, float v) {
  switch (to) {
    case DType::f64: static_cast<double*>(dst)[i] = widen(v); return;
    case DType::f32: static_cast<float*>(dst)[i] = v; return;
    case DType::f16: static_cast<uint16_t*>(dst)[i] = f32_to_f16(v); return;
    case DType::bf16: static_cast<uint16_t*>(dst)[i] = f32_to_bf16(v); return;
    case DType::f8_e4m3: static_cast<uint8_t*>(dst)[i] = f32_to_minifloat<E4M3>(v); return;
    case DType::f8_e5m2: static_cast<uint8_t*>(dst)[i] = f32_to_minifloat<E5M2>(v); return;
    default: return;
  }
}

// Element i of data (a float dtype) multiplied by factor, as scale_elements does it: the
// product taken in double, rounded back through the dtype's value type.
template <DType D>
BALLAST_HD void scale_element(void* data, uint64_t i, double factor) {
  using Value = typename Storage<D>::Value;
  auto* bits = static_cast<typename Storage<D>::Bits*>(data) + i;
  const double product = mul_x86(to_float<double>(decode<D>(*bits)), factor);
  *bits = encode<D>(to_float<Value>(product));
}

BALLAST_HD constexpr bool is_scale_dtype(DType d) { return is_cast_target(d); }

}  // namespace ballast::cuda
