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

// What the part checks of a scheme establish: the dense weight's dims and the layout numbers a
// dequantization kernel needs.
struct QuantizedGeometry {
  WeightDims dims;
  int64_t groups = 1;  // GPTQ, AWQ, int4: scale groups along in_features
  int bits = 0;        // GPTQ: 2, 3, 4 or 8
  // FP8: the scale grid and the block of weight elements each scale covers.
  int64_t scale_rows = 1;
  int64_t scale_cols = 1;
  int64_t row_block = 1;
  int64_t col_block = 1;
};

// Checks the parts as dequantize_parts does (reading only GPTQ's g_idx entries, not the
// weight) and throws as it would; the parts may live in device memory, except g_idx.
QuantizedGeometry check_quantized_parts(QuantizeConfig::Scheme scheme, const NamedParts& parts);

}  // namespace ballast
