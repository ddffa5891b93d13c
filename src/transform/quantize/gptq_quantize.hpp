// GPTQ round-to-nearest packing of a [out, in] f32 weight into the layout AutoGPTQ and vLLM
// load (transposed relative to the torch weight):
//   qweight int32 [in * bits / 32, out]   input element i of column o in word i / (32/bits),
//                                          field i % (32/bits)
//   qzeros  int32 [in / group, out * bits / 32]   (zero - 1) & maxq, packed along the output
//                                          dim (AutoGPTQ's "v1" format)
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
