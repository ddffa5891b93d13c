// Dequantization of ballast's own int4 bundles (layout in int4_quantize.hpp):
// x = (q - zero) * scale per group of input elements.
#include <cstdint>

#include "transform/quantize/dequantize_kernels.hpp"

namespace ballast {

QuantizedGeometry check_int4(const NamedParts& parts) {
  const Tensor& q = require_part(parts, "qweight", {DType::u8}, 2);
  const WeightDims d{q.shape()[0], q.shape()[1] * 2};
  const Tensor& scales_part = require_part(parts, "scales", {}, 2);
  const Tensor& zeros_part = require_part(parts, "zeros", {DType::u8}, 2);
  const int64_t groups = scales_part.shape()[1];
  require_shape(scales_part.shape()[0] == d.out && groups > 0 && d.in % groups == 0, scales_part,
                "expected [out, in / group_size]");
  require_shape(zeros_part.shape() == scales_part.shape(), zeros_part,
                "expected the scales' shape");
  return {.dims = d, .groups = groups};
}

DenseWeight dequantize_int4(const NamedParts& parts) {
  const QuantizedGeometry geometry = check_int4(parts);
  const WeightDims d = geometry.dims;
  const int64_t groups = geometry.groups, group = d.in / groups;
  const auto scales = floats_of(*parts.at("scales"));
  const auto zeros = parts.at("zeros")->as<uint8_t>();
  const auto packed = parts.at("qweight")->as<uint8_t>();
  DenseWeight out{d, std::vector<float>(static_cast<size_t>(d.out * d.in))};
  for (int64_t r = 0; r < d.out; ++r)
    for (int64_t i = 0; i < d.in; ++i) {
      const uint8_t byte = packed[static_cast<size_t>(r * (d.in / 2) + i / 2)];
      const int code = i % 2 == 0 ? byte & 0xF : byte >> 4;
      const size_t g = static_cast<size_t>(r * groups + i / group);
      out.values[static_cast<size_t>(r * d.in + i)] =
          (static_cast<float>(code) - static_cast<float>(zeros[g])) * scales[g];
    }
  return out;
}

}  // namespace ballast
