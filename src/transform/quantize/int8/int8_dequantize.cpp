// Dequantization of ballast's own int8 bundles (layout in int8_quantize.hpp):
// x = (q - zero) * scale, zero = 0 for symmetric int8.
#include <cstdint>

#include "transform/quantize/dequantize_kernels.hpp"

namespace ballast {

QuantizedGeometry check_int8(const NamedParts& parts) {
  const bool symmetric = !parts.contains("qzeros");
  const Tensor& q = require_part(parts, "qweight", {symmetric ? DType::i8 : DType::u8}, 2);
  const WeightDims d{q.shape()[0], q.shape()[1]};
  const Tensor& scales_part = require_part(parts, "scales", {}, 1);
  require_shape(scales_part.shape()[0] == d.out, scales_part, "expected one scale per row");
  if (!symmetric) {
    const Tensor& z = require_part(parts, "qzeros", {DType::u8}, 1);
    require_shape(z.shape()[0] == d.out, z, "expected one zero point per row");
  }
  return {.dims = d};
}

DenseWeight dequantize_int8(const NamedParts& parts) {
  const WeightDims d = check_int8(parts).dims;
  const bool symmetric = !parts.contains("qzeros");
  const Tensor& q = *parts.at("qweight");
  const auto scales = floats_of(*parts.at("scales"));
  std::vector<float> zeros(static_cast<size_t>(d.out), 0.0f);
  if (!symmetric)
    for (int64_t r = 0; r < d.out; ++r) zeros[r] = parts.at("qzeros")->as<uint8_t>()[r];
  DenseWeight out{d, std::vector<float>(static_cast<size_t>(d.out * d.in))};
  for (int64_t r = 0; r < d.out; ++r)
    for (int64_t i = 0; i < d.in; ++i) {
      const size_t k = static_cast<size_t>(r * d.in + i);
      const float v = symmetric ? static_cast<float>(q.as<int8_t>()[k])
                                : static_cast<float>(q.as<uint8_t>()[k]);
      out.values[k] = (v - zeros[r]) * scales[r];
    }
  return out;
}

}  // namespace ballast
