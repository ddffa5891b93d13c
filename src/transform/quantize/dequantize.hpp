// Dequantization of stored parts (from a Quantize bundle or a GPTQ / AWQ / FP8 checkpoint)
// into a dense f32 weight [out_features, in_features] in torch Linear layout. Every part's
// dtype and shape is checked against the others before a value is read; a mismatch is an
// Error(shape_mismatch | dtype_mismatch | not_found) naming the part.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ballast/tensor.hpp"
#include "ballast/transform.hpp"
#include "transform/quantize/quantized_layout.hpp"

namespace ballast {

// Parts under their canonical names: "qweight", "scales", "qzeros", "zeros", "scale", "g_idx".
using NamedParts = std::map<std::string, TensorRef>;

struct DenseWeight {
  WeightDims dims;
  std::vector<float> values;  // row-major [out, in]
};

DenseWeight dequantize_parts(QuantizeConfig::Scheme scheme, const NamedParts& parts);

}  // namespace ballast
