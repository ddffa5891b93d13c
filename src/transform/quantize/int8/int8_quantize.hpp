// INT8 per-output-row quantization of a [out, in] f32 weight.
//
// Symmetric: scales[r] = amax(row) / 127 (1 for an all-zero row), qweight i8 =
// clamp(round_half_even(x / scale), -127, 127). Asymmetric: qweight u8, qzeros u8, with the
// range rules of range_params.hpp at maxq = 255; x ~= (q - zero) * scale.
#pragma once

#include <span>

#include "transform/quantize/part_buffers.hpp"
#include "transform/quantize/quantized_layout.hpp"

namespace ballast {

void quantize_int8(std::span<const float> weight, WeightDims dims, bool symmetric,
                   const PartBuffers& out);

// One row, symmetric (vectorized): returns the scale and writes n values.
float quantize_int8_row(const float* row, int64_t n, int8_t* q);

}  // namespace ballast
