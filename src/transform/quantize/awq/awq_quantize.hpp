// AWQ (4-bit, GEMM layout) round-to-nearest packing of a [out, in] f32 weight into the layout
// AutoAWQ and vLLM load:
//   qweight int32 [in, out / 8]          packed along the output dim in kAwqOrder
//   qzeros  int32 [in / group, out / 8]  same packing
//   scales  f16   [in / group, out]
// Scales and zero points follow AutoAWQ (group_params.hpp); without zero_point the zero
// point is the constant 8 (symmetric), so the file stays in the same layout.
#pragma once

#include <span>

#include "transform/quantize/part_buffers.hpp"
#include "transform/quantize/quantized_layout.hpp"

namespace ballast {

void quantize_awq(std::span<const float> weight, WeightDims dims, const QuantizeConfig& config,
                  const PartBuffers& out);

}  // namespace ballast
