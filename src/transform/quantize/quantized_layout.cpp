// Part layouts of quantized bundles (see quantized_layout.hpp).
#include "transform/quantize/quantized_layout.hpp"

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "util/shape_util.hpp"

namespace ballast {
namespace {

using Scheme = QuantizeConfig::Scheme;

void require_group(int group, int64_t extent, const char* dim_name) {
  if (group <= 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("group size must be positive, got {}", group));
  if (extent % group != 0)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("group size {} does not divide {} {}", group, dim_name, extent));
}

void require_multiple(int64_t extent, int64_t unit, const char* dim_name, int bits) {
  if (extent % unit != 0)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("{} {} is not a multiple of {} (the values that fill whole 32-bit "
                            "words at {} bits)",
                            dim_name, extent, unit, bits));
}

std::vector<PartLayout> gptq_layout(const QuantizeConfig& c, WeightDims d) {
  if (c.bits != 2 && c.bits != 3 && c.bits != 4 && c.bits != 8)
    throw Error(ErrorCode::unsupported,
                fmt::format("gptq supports 2, 3, 4 or 8 bits, got {}", c.bits));
  const int64_t unit = values_per_whole_words(c.bits);
  require_group(c.group_size, d.in, "in_features");
  require_multiple(d.in, unit, "in_features", c.bits);
  require_multiple(d.out, unit, "out_features", c.bits);
  const int64_t groups = d.in / c.group_size;
  std::vector<PartLayout> parts = {{"qweight", DType::i32, {d.in * c.bits / 32, d.out}},
                                   {"qzeros", DType::i32, {groups, d.out * c.bits / 32}},
                                   {"scales", DType::f16, {groups, d.out}}};
  if (c.desc_act) parts.push_back({"g_idx", DType::i32, {d.in}});
  return parts;
}

std::vector<PartLayout> awq_layout(const QuantizeConfig& c, WeightDims d) {
  if (c.bits != 4)
    throw Error(ErrorCode::unsupported, fmt::format("awq supports 4 bits, got {}", c.bits));
  require_group(c.group_size, d.in, "in_features");
  require_multiple(d.out, 8, "out_features", c.bits);
  const int64_t groups = d.in / c.group_size;
  return {{"qweight", DType::i32, {d.in, d.out / 8}},
          {"qzeros", DType::i32, {groups, d.out / 8}},
          {"scales", DType::f16, {groups, d.out}}};
}

}  // namespace

std::vector<PartLayout> quantized_layout(const QuantizeConfig& c, const Shape& shape) {
  if (shape.size() != 2)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("quantization needs a 2-D weight [out_features, in_features], got {}",
                            shape_text(shape)));
  const WeightDims d{shape[0], shape[1]};
  switch (c.scheme) {
    case Scheme::int8:
      if (c.symmetric)
        return {{"qweight", DType::i8, {d.out, d.in}}, {"scales", DType::f32, {d.out}}};
      return {{"qweight", DType::u8, {d.out, d.in}},
              {"scales", DType::f32, {d.out}},
              {"qzeros", DType::u8, {d.out}}};
    case Scheme::int4: {
      require_group(c.group_size, d.in, "in_features");
      if (d.in % 2 != 0)
        throw Error(ErrorCode::shape_mismatch,
                    fmt::format("int4 packs two values per byte; in_features {} is odd", d.in));
      const int64_t groups = d.in / c.group_size;
      return {{"qweight", DType::u8, {d.out, d.in / 2}},
              {"scales", DType::f32, {d.out, groups}},
              {"zeros", DType::u8, {d.out, groups}}};
    }
    case Scheme::fp8:
      if (c.fp8_dtype != DType::f8_e4m3 && c.fp8_dtype != DType::f8_e5m2)
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("fp8 quantization targets f8_e4m3 or f8_e5m2, not {}",
                                dtype_name(c.fp8_dtype)));
      return {{"qweight", c.fp8_dtype, {d.out, d.in}}, {"scale", DType::f32, {}}};
    case Scheme::gptq: return gptq_layout(c, d);
    case Scheme::awq: return awq_layout(c, d);
  }
  throw Error(ErrorCode::invalid_argument, "unknown quantization scheme");
}

}  // namespace ballast
