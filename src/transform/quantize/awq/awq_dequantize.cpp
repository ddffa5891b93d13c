// Dequantization of AWQ (GEMM layout, 4-bit) checkpoints (layout in awq_quantize.hpp):
// out = 8 * qweight columns, group = in / scales rows, x[o, i] = (q - zero) * scale with both q
// and zero read from AWQ's interleaved nibbles.
#include <cstdint>

#include <fmt/format.h>

#include "transform/quantize/dequantize_kernels.hpp"
#include "transform/quantize/word_packing.hpp"

namespace ballast {

QuantizedGeometry check_awq(const NamedParts& parts) {
  const Tensor& qweight = require_part(parts, "qweight", {DType::i32, DType::u32}, 2);
  const Tensor& qzeros = require_part(parts, "qzeros", {DType::i32, DType::u32}, 2);
  const Tensor& scales_part = require_part(parts, "scales", {}, 2);
  const int64_t in = qweight.shape()[0], words = qweight.shape()[1], out = words * 8;
  const int64_t groups = scales_part.shape()[0];
  require_shape(scales_part.shape()[1] == out && groups > 0 && in % groups == 0, scales_part,
                fmt::format("expected [in / group_size, {}]", out));
  require_shape(qzeros.shape() == Shape{groups, words}, qzeros,
                fmt::format("expected [{}, {}]", groups, words));
  return {.dims = {out, in}, .groups = groups};
}

DenseWeight dequantize_awq(const NamedParts& parts) {
  const QuantizedGeometry geometry = check_awq(parts);
  const int64_t out = geometry.dims.out, in = geometry.dims.in, words = out / 8;
  const int64_t group = in / geometry.groups;
  const Tensor& qweight = *parts.at("qweight");
  const Tensor& qzeros = *parts.at("qzeros");
  const auto scales = floats_of(*parts.at("scales"));
  const auto q_words = qweight.as<uint32_t>();
  const auto z_words = qzeros.as<uint32_t>();
  DenseWeight result{{out, in}, std::vector<float>(static_cast<size_t>(out * in))};
  for (int64_t i = 0; i < in; ++i) {
    const int64_t g = i / group;
    for (int64_t o = 0; o < out; ++o) {
      const int nibble = kAwqNibbleOf[static_cast<size_t>(o % 8)];
      const uint32_t q = get_field(q_words[i * words + o / 8], nibble, 4);
      const uint32_t zero = get_field(z_words[g * words + o / 8], nibble, 4);
      result.values[static_cast<size_t>(o * in + i)] =
          (static_cast<float>(q) - static_cast<float>(zero)) *
          scales[static_cast<size_t>(g * out + o)];
    }
  }
  return result;
}

}  // namespace ballast
