// Dequantization of GPTQ checkpoints (layout in gptq_quantize.hpp). Bits and group size follow
// from the shapes: bits = 32 * qzeros columns / out (2, 3, 4 or 8), in = qweight rows * 32 / bits,
// group = in / scales rows. Zero points are stored minus one (v1), so zero = (field + 1) & maxq;
// g_idx, when present, gives each input element's group. x[o, i] = (q - zero) * scale.
#include <cstdint>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "transform/quantize/dequantize_kernels.hpp"
#include "transform/quantize/word_packing.hpp"

namespace ballast {
namespace {

int64_t group_entry(const Tensor& g_idx, int64_t i) {
  return g_idx.dtype() == DType::i32 ? g_idx.as<int32_t>()[i] : g_idx.as<int64_t>()[i];
}

}  // namespace

QuantizedGeometry check_gptq(const NamedParts& parts) {
  const Tensor& qweight = require_part(parts, "qweight", {DType::i32, DType::u32}, 2);
  const Tensor& qzeros = require_part(parts, "qzeros", {DType::i32, DType::u32}, 2);
  const Tensor& scales_part = require_part(parts, "scales", {}, 2);
  const int64_t out = scales_part.shape()[1], groups = scales_part.shape()[0];
  require_shape(qweight.shape()[1] == out && out > 0 && groups > 0, qweight,
                fmt::format("expected {} columns (the scales' out_features)", out));
  const int64_t zero_words = qzeros.shape()[1];
  const bool bits_ok = (zero_words * 32) % out == 0;
  const int bits = bits_ok ? static_cast<int>(zero_words * 32 / out) : 0;
  require_shape(
      bits_ok && (bits == 2 || bits == 3 || bits == 4 || bits == 8) && qzeros.shape()[0] == groups,
      qzeros, "expected [groups, out * bits / 32] with 2, 3, 4 or 8 bits");
  require_shape((qweight.shape()[0] * 32) % bits == 0, qweight,
                fmt::format("{} rows do not hold whole {}-bit values", qweight.shape()[0], bits));
  const int64_t in = qweight.shape()[0] * 32 / bits;
  require_shape(in % groups == 0, scales_part,
                fmt::format("groups do not divide in_features {}", in));
  if (parts.contains("g_idx")) {
    const Tensor& g_idx = require_part(parts, "g_idx", {DType::i32, DType::i64}, 1);
    require_shape(g_idx.shape()[0] == in, g_idx, fmt::format("expected [{}]", in));
    for (int64_t i = 0; i < in; ++i) {
      const int64_t v = group_entry(g_idx, i);
      require_shape(v >= 0 && v < groups, g_idx, fmt::format("entry {} is {}, not a group", i, v));
    }
  }
  return {.dims = {out, in}, .groups = groups, .bits = bits};
}

DenseWeight dequantize_gptq(const NamedParts& parts) {
  const QuantizedGeometry geometry = check_gptq(parts);
  const int64_t out = geometry.dims.out, in = geometry.dims.in, groups = geometry.groups;
  const int bits = geometry.bits;
  const int64_t zero_words = out * bits / 32;
  std::vector<int64_t> group_of(static_cast<size_t>(in));
  const auto g_idx = parts.find("g_idx");
  for (int64_t i = 0; i < in; ++i)
    group_of[i] = g_idx != parts.end() ? group_entry(*g_idx->second, i) : i / (in / groups);
  const auto scales = floats_of(*parts.at("scales"));
  const Tensor& qweight = *parts.at("qweight");
  const Tensor& qzeros = *parts.at("qzeros");
  const auto words = qweight.as<uint32_t>();
  const auto zero_bits = qzeros.as<uint32_t>();
  const uint32_t maxq = field_mask(bits);
  DenseWeight result{{out, in}, std::vector<float>(static_cast<size_t>(out * in))};
  for (int64_t i = 0; i < in; ++i) {
    const int64_t g = group_of[i];
    for (int64_t o = 0; o < out; ++o) {
      const uint32_t q = get_streamed(&words[o], out, i, bits);
      const uint32_t stored = get_streamed(&zero_bits[g * zero_words], 1, o, bits);
      const float zero = static_cast<float>((stored + 1) & maxq);
      result.values[static_cast<size_t>(o * in + i)] =
          (static_cast<float>(q) - zero) * scales[static_cast<size_t>(g * out + o)];
    }
  }
  return result;
}

}  // namespace ballast
