// Element-wise value kernels: dtype casts and scaling over contiguous runs of elements.
//
// Rules (documented in docs/transforms.md): floats round to nearest-even; NaN is preserved; e4m3
// saturates; float -> integer truncates toward zero (NaN -> 0, beyond int64 clamps), then
// narrowing integer casts wrap modulo 2^bits like torch's .to(); anything -> bool is "!= 0";
// bool -> number is 0 or 1; ggml block types dequantize to f32 exactly as ggml does (then
// cast further for f16 / bf16 / f64 targets).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ballast/dtype.hpp"

namespace ballast {

// True when cast_elements supports from -> to.
bool can_cast(DType from, DType to);
// Converts n elements; src and dst must not overlap unless from == to.
void cast_elements(DType from, const std::byte* src, DType to, std::byte* dst, size_t n);

// True when scale_elements supports dtype (float types only).
bool can_scale(DType dtype);
// Multiplies n elements in place by factor, rounding back into dtype.
void scale_elements(DType dtype, std::byte* data, size_t n, double factor);

}  // namespace ballast
