// The per-scheme dequantization kernels behind dequantize_parts (see dequantize.hpp), and the
// part checks they share.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "transform/quantize/dequantize.hpp"

namespace ballast {

// The part checks of each scheme (every part's dtype and shape, GPTQ's g_idx entries), without
// reading the weight: what the dequantization of that scheme establishes before it runs.
QuantizedGeometry check_int8(const NamedParts& parts);
QuantizedGeometry check_int4(const NamedParts& parts);
QuantizedGeometry check_fp8(const NamedParts& parts);
QuantizedGeometry check_gptq(const NamedParts& parts);
QuantizedGeometry check_awq(const NamedParts& parts);

DenseWeight dequantize_int8(const NamedParts& parts);
DenseWeight dequantize_int4(const NamedParts& parts);
DenseWeight dequantize_fp8(const NamedParts& parts);
DenseWeight dequantize_gptq(const NamedParts& parts);
DenseWeight dequantize_awq(const NamedParts& parts);

// The part `name`; throws Error(not_found) when absent, Error(dtype_mismatch) when its dtype
// is not one of `dtypes` (empty: any float dtype), Error(shape_mismatch) for another rank.
const Tensor& require_part(const NamedParts& parts, const std::string& name,
                           std::initializer_list<DType> dtypes, size_t rank);
// Throws Error(shape_mismatch) naming the part, with `what` as the reason, unless `ok`.
void require_shape(bool ok, const Tensor& part, const std::string& what);
// The elements of a float part as f32.
std::vector<float> floats_of(const Tensor& part);

}  // namespace ballast
