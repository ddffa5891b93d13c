// Dequantization on the device: a quantized weight whose parts (packed weight, scales, zero
// points, g_idx) were loaded into device memory in their stored form is checked as on the host
// (the g_idx entries copied back for the range check) and expanded into the dense weight by the
// backend's kernels, in new device memory of the same backend. A backend without them has the
// parts copied back, dequantized on the host and the dense weight uploaded.
#pragma once

#include <string>

#include "ballast/tensor.hpp"
#include "transform/quantize/dequantize.hpp"

namespace ballast {

// `parts` are device tensors of one device backend (device_tensor_factory.hpp); dtype is f32,
// f16 or bf16. Throws as dequantize_parts does for parts that do not fit the scheme.
TensorRef dequantize_on_device(QuantizeConfig::Scheme scheme, const NamedParts& parts, DType dtype,
                               const std::string& name);

}  // namespace ballast
