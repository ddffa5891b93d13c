// Highway kernels for simd_kernels.hpp. This file is compiled once per target by
// foreach_target.h; HWY_DYNAMIC_DISPATCH picks one at the first call.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "transform/simd_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>

#include "transform/float_bits.hpp"
#include "transform/simd_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace ballast {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DU32 = hn::RebindToUnsigned<DF>;
using DI32 = hn::RebindToSigned<DF>;
using DU16 = hn::Rebind<uint16_t, DF>;  // half-width: one u16 per f32 lane

// u32 lanes below 2^31 compared as signed lanes, which every target supports.
template <class V>
auto Above(V a, uint32_t c) {
  const DI32 di;
  return hn::RebindMask(DU32(), hn::Gt(hn::BitCast(di, a), hn::Set(di, static_cast<int32_t>(c))));
}
template <class V>
auto Below(V a, uint32_t c) {
  const DI32 di;
  return hn::RebindMask(DU32(), hn::Lt(hn::BitCast(di, a), hn::Set(di, static_cast<int32_t>(c))));
}

void Bf16ToF32(const uint16_t* in, float* out, size_t n) {
  const DF df;
  const DU32 du32;
  const DU16 du16;
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto wide = hn::PromoteTo(du32, hn::LoadU(du16, in + i));
    hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(wide)), df, out + i);
  }
  for (; i < n; ++i) out[i] = bf16_to_f32(in[i]);
}

void F16ToF32(const uint16_t* in, float* out, size_t n) {
  const DF df;
  const DU32 du32;
  const DU16 du16;
  const size_t lanes = hn::Lanes(df);
  const auto exp_rebias = hn::Set(du32, 112u << 23);  // (127 - 15) << 23
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto h = hn::PromoteTo(du32, hn::LoadU(du16, in + i));
    const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du32, 0x8000u)));
    const auto magnitude = hn::And(h, hn::Set(du32, 0x7FFFu));
    const auto normal = hn::Add(hn::ShiftLeft<13>(magnitude), exp_rebias);
    // Infinity and NaN: exponent all ones in f32 too (rebias twice), payload kept.
    const auto special = hn::Add(normal, exp_rebias);
    // Zero and subnormals: magnitude * 2^-24, exact in f32.
    const auto tiny = hn::BitCast(
        du32, hn::Mul(hn::ConvertTo(df, hn::BitCast(DI32(), magnitude)), hn::Set(df, 0x1p-24f)));
    auto bits = hn::IfThenElse(Above(magnitude, 0x7BFFu), special, normal);
    bits = hn::IfThenElse(Below(magnitude, 0x0400u), tiny, bits);
    hn::StoreU(hn::BitCast(df, hn::Or(bits, sign)), df, out + i);
  }
  for (; i < n; ++i) out[i] = f16_to_f32(in[i]);
}

void F32ToBf16(const float* in, uint16_t* out, size_t n) {
  const DF df;
  const DU32 du32;
  const DU16 du16;
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto x = hn::BitCast(du32, hn::LoadU(df, in + i));
    const auto odd = hn::And(hn::ShiftRight<16>(x), hn::Set(du32, 1u));
    const auto rounded = hn::ShiftRight<16>(hn::Add(x, hn::Add(hn::Set(du32, 0x7FFFu), odd)));
    const auto quiet_nan = hn::Or(hn::ShiftRight<16>(x), hn::Set(du32, 0x40u));
    const auto is_nan = Above(hn::And(x, hn::Set(du32, 0x7FFFFFFFu)), 0x7F800000u);
    const auto bits = hn::IfThenElse(is_nan, quiet_nan, rounded);
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(DI32(), bits)), du16, out + i);
  }
  for (; i < n; ++i) out[i] = f32_to_bf16(in[i]);
}

void F32ToF16(const float* in, uint16_t* out, size_t n) {
  const DF df;
  const DU32 du32;
  const DU16 du16;
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto x = hn::BitCast(du32, hn::LoadU(df, in + i));
    const auto sign = hn::And(hn::ShiftRight<16>(x), hn::Set(du32, 0x8000u));
    const auto abs = hn::And(x, hn::Set(du32, 0x7FFFFFFFu));
    const auto odd = hn::And(hn::ShiftRight<13>(abs), hn::Set(du32, 1u));
    const auto normal = hn::ShiftRight<13>(
        hn::Sub(hn::Add(abs, hn::Add(hn::Set(du32, 0x0FFFu), odd)), hn::Set(du32, 0x38000000u)));
    // Subnormal or zero: adding 0.5 puts the f16 mantissa at the bottom, rounded to even.
    const auto magic = hn::Add(hn::BitCast(df, abs), hn::Set(df, 0.5f));
    const auto tiny = hn::Sub(hn::BitCast(du32, magic), hn::Set(du32, 0x3F000000u));
    const auto nan =
        hn::Or(hn::Set(du32, 0x7E00u), hn::And(hn::ShiftRight<13>(abs), hn::Set(du32, 0x3FFu)));
    auto bits = hn::IfThenElse(Below(abs, 0x38800000u), tiny, normal);
    bits = hn::IfThenElse(Above(abs, 0x477FEFFFu), hn::Set(du32, 0x7C00u), bits);
    bits = hn::IfThenElse(Above(abs, 0x7F800000u), nan, bits);
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(DI32(), hn::Or(bits, sign))), du16, out + i);
  }
  for (; i < n; ++i) out[i] = f32_to_f16(in[i]);
}

void QuantizeInt8(const float* row, float scale, int8_t* q, size_t n) {
  const DF df;
  const DI32 di32;
  const hn::Rebind<int8_t, DF> di8;
  const size_t lanes = hn::Lanes(df);
  const auto vscale = hn::Set(df, scale);
  const auto lo = hn::Set(df, -127.0f), hi = hn::Set(df, 127.0f);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto r = hn::Round(hn::Div(hn::LoadU(df, row + i), vscale));
    const auto clamped = hn::Min(hn::Max(r, lo), hi);
    hn::StoreU(hn::DemoteTo(di8, hn::ConvertTo(di32, clamped)), di8, q + i);
  }
  for (; i < n; ++i)
    q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(row[i] / scale), -127.0f, 127.0f));
}

float MaxAbs(const float* row, size_t n) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  auto acc = hn::Zero(df);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) acc = hn::Max(acc, hn::Abs(hn::LoadU(df, row + i)));
  float amax = hn::GetLane(hn::MaxOfLanes(df, acc));
  for (; i < n; ++i) amax = std::max(amax, std::fabs(row[i]));
  return amax;
}

}  // namespace HWY_NAMESPACE
}  // namespace ballast
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ballast {

HWY_EXPORT(Bf16ToF32);
HWY_EXPORT(F16ToF32);
HWY_EXPORT(F32ToBf16);
HWY_EXPORT(F32ToF16);
HWY_EXPORT(QuantizeInt8);
HWY_EXPORT(MaxAbs);

void simd_bf16_to_f32(const uint16_t* in, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(Bf16ToF32)(in, out, n);
}
void simd_f16_to_f32(const uint16_t* in, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(F16ToF32)(in, out, n);
}
void simd_f32_to_bf16(const float* in, uint16_t* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(F32ToBf16)(in, out, n);
}
void simd_f32_to_f16(const float* in, uint16_t* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(F32ToF16)(in, out, n);
}
void simd_quantize_int8(const float* row, float scale, int8_t* q, size_t n) {
  HWY_DYNAMIC_DISPATCH(QuantizeInt8)(row, scale, q, n);
}
float simd_max_abs(const float* row, size_t n) { return HWY_DYNAMIC_DISPATCH(MaxAbs)(row, n); }

}  // namespace ballast
#endif
