// Runs a Quantize step on a dense weight and returns the bundle: a Tensor named after the
// weight with the dtype, shape and bytes of its "qweight" part, whose parts() hold every
// part (qweight included), each named "<tensor>.<part>".
#pragma once

#include <memory>
#include <string>

#include "ballast/tensor.hpp"
#include "ballast/transform.hpp"

namespace ballast {

// `dense` is a contiguous f32 [out, in] tensor. Throws Error(unsupported) when it holds NaN
// or infinity, plus the layout errors of quantized_layout().
std::shared_ptr<Tensor> quantize_weight(const Tensor& dense, const QuantizeConfig& config,
                                        const std::string& name, TensorFactory& factory,
                                        size_t alignment);

}  // namespace ballast
