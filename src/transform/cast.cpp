// Element-wise casts and scaling (rules in cast.hpp). The hot casts (bf16 / f16 <-> f32) run
// the run-time dispatched Highway kernels of simd_kernels.hpp; every other (from, to) pair
// compiles to its own loop through a typed load and store.
#include "transform/cast.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "transform/float_bits.hpp"
#include "transform/ggml_dequant.hpp"
#include "transform/simd_kernels.hpp"

namespace ballast {
namespace {

// Storage tags: each knows how to load one element as a float or integer and store one back.
template <typename Bits, typename Value>
struct Tag {
  using bits_type = Bits;
  using value_type = Value;
};
struct F64 : Tag<double, double> {};
struct F32 : Tag<float, float> {};
struct F16 : Tag<uint16_t, float> {};
struct BF16 : Tag<uint16_t, float> {};
struct E4M3 : Tag<uint8_t, float> {};
struct E5M2 : Tag<uint8_t, float> {};
template <typename I>
struct Int : Tag<I, I> {};
struct Bool : Tag<uint8_t, bool> {};

template <typename T>
typename T::value_type decode(typename T::bits_type b) {
  if constexpr (std::is_same_v<T, F16>)
    return f16_to_f32(b);
  else if constexpr (std::is_same_v<T, BF16>)
    return bf16_to_f32(b);
  else if constexpr (std::is_same_v<T, E4M3>)
    return minifloat_to_f32(b, kE4M3);
  else if constexpr (std::is_same_v<T, E5M2>)
    return minifloat_to_f32(b, kE5M2);
  else if constexpr (std::is_same_v<T, Bool>)
    return b != 0;
  else
    return b;
}

template <typename T>
typename T::bits_type encode(typename T::value_type v) {
  if constexpr (std::is_same_v<T, F16>)
    return f32_to_f16(v);
  else if constexpr (std::is_same_v<T, BF16>)
    return f32_to_bf16(v);
  else if constexpr (std::is_same_v<T, E4M3>)
    return f32_to_minifloat(v, kE4M3);
  else if constexpr (std::is_same_v<T, E5M2>)
    return f32_to_minifloat(v, kE5M2);
  else if constexpr (std::is_same_v<T, Bool>)
    return v ? 1 : 0;
  else
    return v;
}

// Float -> integer: truncate toward zero, NaN -> 0, clamp to int64, then wrap to the width.
template <typename I, typename F>
I float_to_int(F f) {
  if (std::isnan(f)) return 0;
  constexpr F lo = static_cast<F>(std::numeric_limits<int64_t>::min());
  constexpr F hi = static_cast<F>(std::numeric_limits<int64_t>::max());
  if constexpr (std::is_same_v<I, uint64_t>) {
    if (f >= static_cast<F>(18446744073709551615.0)) return std::numeric_limits<uint64_t>::max();
    if (f >= hi) return static_cast<uint64_t>(f);
  }
  int64_t wide = f <= lo   ? std::numeric_limits<int64_t>::min()
                 : f >= hi ? std::numeric_limits<int64_t>::max()
                           : static_cast<int64_t>(f);
  return static_cast<I>(wide);
}

template <typename To, typename From>
typename To::value_type convert(typename From::value_type v) {
  using FV = typename From::value_type;
  using TV = typename To::value_type;
  if constexpr (std::is_same_v<TV, bool>) {
    return v != FV{};
  } else if constexpr (std::is_floating_point_v<TV>) {
    return static_cast<TV>(v);
  } else if constexpr (std::is_floating_point_v<FV>) {
    return float_to_int<TV>(v);
  } else {
    return static_cast<TV>(v);  // integer narrowing wraps (two's complement, C++20)
  }
}

template <typename From, typename To>
void cast_loop(const std::byte* src, std::byte* dst, size_t n) {
  using FB = typename From::bits_type;
  using TB = typename To::bits_type;
  for (size_t i = 0; i < n; ++i) {
    FB in;
    std::memcpy(&in, src + i * sizeof(FB), sizeof(FB));
    TB out = encode<To>(convert<To, From>(decode<From>(in)));
    std::memcpy(dst + i * sizeof(TB), &out, sizeof(TB));
  }
}

// Calls f(Tag{}) for the tag of dtype; returns false for dtypes without a kernel.
template <typename F>
bool with_tag(DType d, F&& f) {
  switch (d) {
    case DType::f64: f(F64{}); return true;
    case DType::f32: f(F32{}); return true;
    case DType::f16: f(F16{}); return true;
    case DType::bf16: f(BF16{}); return true;
    case DType::f8_e4m3: f(E4M3{}); return true;
    case DType::f8_e5m2: f(E5M2{}); return true;
    case DType::i64: f(Int<int64_t>{}); return true;
    case DType::i32: f(Int<int32_t>{}); return true;
    case DType::i16: f(Int<int16_t>{}); return true;
    case DType::i8: f(Int<int8_t>{}); return true;
    case DType::u64: f(Int<uint64_t>{}); return true;
    case DType::u32: f(Int<uint32_t>{}); return true;
    case DType::u16: f(Int<uint16_t>{}); return true;
    case DType::u8: f(Int<uint8_t>{}); return true;
    case DType::boolean: f(Bool{}); return true;
    default: return false;
  }
}

// The vectorized casts; false when (from, to) has none.
bool simd_cast(DType from, const std::byte* src, DType to, std::byte* dst, size_t n) {
  const auto* u16_in = reinterpret_cast<const uint16_t*>(src);
  const auto* f32_in = reinterpret_cast<const float*>(src);
  auto* u16_out = reinterpret_cast<uint16_t*>(dst);
  auto* f32_out = reinterpret_cast<float*>(dst);
  if (from == DType::bf16 && to == DType::f32) return simd_bf16_to_f32(u16_in, f32_out, n), true;
  if (from == DType::f16 && to == DType::f32) return simd_f16_to_f32(u16_in, f32_out, n), true;
  if (from == DType::f32 && to == DType::bf16) return simd_f32_to_bf16(f32_in, u16_out, n), true;
  if (from == DType::f32 && to == DType::f16) return simd_f32_to_f16(f32_in, u16_out, n), true;
  return false;
}

}  // namespace

bool can_cast(DType from, DType to) {
  auto nothing = [](auto) {};
  if (dtype_info(from).kind == DTypeKind::quantized)  // dequantize to f32, then cast
    return ggml_can_dequantize(from) && dtype_info(to).kind == DTypeKind::floating &&
           can_cast(DType::f32, to);
  return from == to || (with_tag(from, nothing) && with_tag(to, nothing));
}

void cast_elements(DType from, const std::byte* src, DType to, std::byte* dst, size_t n) {
  if (from == to) {
    if (src != dst) std::memmove(dst, src, *dtype_bytes_for(from, n));
    return;
  }
  if (dtype_info(from).kind == DTypeKind::quantized) {
    std::span<const std::byte> blocks(src, *dtype_bytes_for(from, n));
    if (to == DType::f32)
      return ggml_dequantize_to_f32(from, blocks, {reinterpret_cast<float*>(dst), n});
    std::vector<float> f32(n);
    ggml_dequantize_to_f32(from, blocks, f32);
    return cast_elements(DType::f32, reinterpret_cast<const std::byte*>(f32.data()), to, dst, n);
  }
  if (simd_cast(from, src, to, dst, n)) return;
  bool done = false;
  with_tag(from, [&](auto from_tag) {
    with_tag(to, [&](auto to_tag) {
      cast_loop<decltype(from_tag), decltype(to_tag)>(src, dst, n);
      done = true;
    });
  });
  if (!done)
    throw Error(ErrorCode::unsupported, fmt::format("cast from {} to {} is not supported",
                                                    dtype_name(from), dtype_name(to)));
}

bool can_scale(DType dtype) {
  return dtype_info(dtype).kind == DTypeKind::floating && with_tag(dtype, [](auto) {});
}

void scale_elements(DType dtype, std::byte* data, size_t n, double factor) {
  bool done = false;
  with_tag(dtype, [&](auto tag) {
    using T = decltype(tag);
    using B = typename T::bits_type;
    using V = typename T::value_type;
    if constexpr (std::is_floating_point_v<V>) {
      for (size_t i = 0; i < n; ++i) {
        B bits;
        std::memcpy(&bits, data + i * sizeof(B), sizeof(B));
        V v = static_cast<V>(static_cast<double>(decode<T>(bits)) * factor);
        bits = encode<T>(v);
        std::memcpy(data + i * sizeof(B), &bits, sizeof(B));
      }
      done = true;
    }
  });
  if (!done)
    throw Error(ErrorCode::dtype_mismatch,
                fmt::format("scale needs a float tensor, got {}; cast first", dtype_name(dtype)));
}

}  // namespace ballast
