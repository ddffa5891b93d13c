// INT4 grouped asymmetric quantization of a [out, in] f32 weight.
//
// Groups of group_size consecutive input elements per output row; each has an f32 scale and
// an integer zero point (0..15, one per byte) from range_params.hpp at maxq = 15. Values pack
// two per byte along the input dimension, element 2k in the low nibble and 2k+1 in the high
// nibble: qweight u8 [out, in/2], scales f32 [out, in/group], zeros u8 [out, in/group].
#pragma once

#include <span>

#include "transform/quantize/part_buffers.hpp"
#include "transform/quantize/quantized_layout.hpp"

namespace ballast {

void quantize_int4(std::span<const float> weight, WeightDims dims, int group_size,
                   const PartBuffers& out);

}  // namespace ballast
