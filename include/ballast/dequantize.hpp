// Dequantization: turning quantized weights back into dense float tensors.
//
// A quantized weight is several stored tensors (GPTQ: qweight, qzeros, scales, g_idx), so it is
// loaded by base name rather than as one Transformation of one tensor: load_dequantized finds
// "<base>.qweight", "<base>.scales", ... in the source, loads them through any WeightLoader and
// returns one dense [out_features, in_features] tensor (torch Linear layout). dequantize does
// the same for a bundle returned by a Quantize step. Layouts: docs/transforms.md.
#pragma once

#include <string>

#include "ballast/loader.hpp"
#include "ballast/tensor.hpp"
#include "ballast/transform.hpp"

namespace ballast {

struct DequantizeSpec {
  WeightSource source;
  // Tensor name without the part suffix: "model.layers.0.mlp.down_proj" for GPTQ / AWQ
  // (".qweight", ".qzeros", ".scales", ".g_idx"); for FP8 the weight's prefix, whose parts are
  // ".weight" or ".qweight" and ".weight_scale", ".weight_scale_inv" or ".scale".
  std::string base;
  QuantizeConfig::Scheme scheme = QuantizeConfig::Scheme::gptq;
  DType dtype = DType::f16;  // f32, f16 or bf16
  // Where the dense tensor lives. On a CUDA device the parts are uploaded in their stored
  // (packed) form and dequantized there; the dense tensor gets device memory of its own (not
  // a device arena factory's).
  Device device = Device::cpu();
};

// Throws Error(not_found) naming the parts looked for, Error(shape_mismatch | dtype_mismatch)
// when the parts disagree with each other or with the scheme.
TensorRef load_dequantized(WeightLoader& loader, const DequantizeSpec& spec);

// The dense tensor of a Quantize bundle (bundle.parts()), named after the bundle.
TensorRef dequantize(const Tensor& bundle, QuantizeConfig::Scheme scheme, DType dtype = DType::f32);

}  // namespace ballast
