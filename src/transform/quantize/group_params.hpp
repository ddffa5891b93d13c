// Per-group scales and zero points for the checkpoint schemes that store f16 scales (GPTQ,
// AWQ), indexed [out_row * groups + group]. Rules:
//   gptq      AutoGPTQ's asymmetric find_params (range_params.hpp)
//   awq_zp    AutoAWQ's pseudo_quantize_tensor: scale = max(max - min, 1e-5) / maxq,
//             zero = clamp(-round(min / scale), 0, maxq) (the range need not include 0)
//   awq_sym   AutoAWQ without a zero point: scale = max(amax, 1e-5) / (2^(bits-1) - 1) and a
//             fixed zero point 2^(bits-1), so the same unsigned packing and (q - zero) * scale
//             dequantization apply
// The zero point is computed from the f32 scale; values then quantize with the f16 scale the
// file stores, as AutoGPTQ's and AutoAWQ's packers do.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "transform/quantize/quantized_layout.hpp"
#include "transform/quantize/range_params.hpp"

namespace ballast {

enum class GroupRule { gptq, awq_zp, awq_sym };

struct GroupParams {
  std::vector<float> scales;         // the f16 scale, as f32
  std::vector<uint16_t> scale_bits;  // the f16 scale's bits
  std::vector<float> zeros;          // integer zero points
};

// Throws Error(unsupported) when a scale does not fit in f16.
GroupParams f16_group_params(std::span<const float> weight, WeightDims dims, int64_t group,
                             int maxq, GroupRule rule);

}  // namespace ballast
