// FP8 per-tensor quantization of a [out, in] f32 weight: scale = amax / format max (448 for
// e4m3, 57344 for e5m2; 1 for an all-zero tensor), qweight = saturate(x / scale) rounded to
// nearest-even in the FP8 dtype, and the "scale" part an f32 scalar; x ~= q * scale.
#pragma once

#include <span>

#include "ballast/dtype.hpp"
#include "transform/quantize/part_buffers.hpp"

namespace ballast {

void quantize_fp8(std::span<const float> weight, DType fp8_dtype, const PartBuffers& out);

// The largest finite value of f8_e4m3 (448) or f8_e5m2 (57344).
float fp8_max(DType fp8_dtype);

}  // namespace ballast
