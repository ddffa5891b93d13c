// GPTQ round-to-nearest packing (2, 3, 4 or 8 bits) of a [out, in] f32 weight into the layout
// AutoGPTQ and vLLM load (transposed relative to the torch weight):
//   qweight int32 [in * bits / 32, out]   column o's input elements as one bit stream down
//                                          the rows: element i at bits [bits*i, bits*(i+1))
//                                          (word_packing.hpp; 3-bit values may straddle words)
//   qzeros  int32 [in / group, out * bits / 32]   (zero - 1) & maxq, one bit stream along the
//                                          output dim per group (AutoGPTQ's "v1" format)
//   scales  f16   [in / group, out]
//   g_idx   int32 [in]   i / group, only with desc_act (round-to-nearest has no Hessian to
//                        reorder by, so the order is the identity)
// Asymmetric groups per output row (range_params.hpp); q uses the f16 scale the file stores.
#pragma once

#include <span>

#include "transform/quantize/part_buffers.hpp"
#include "transform/quantize/quantized_layout.hpp"

namespace ballast {

void quantize_gptq(std::span<const float> weight, WeightDims dims, const QuantizeConfig& config,
                   const PartBuffers& out);

}  // namespace ballast
