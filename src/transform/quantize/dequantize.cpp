// Dequantization dispatch and the shared part checks (see dequantize.hpp).
#include "transform/quantize/dequantize.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ballast/error.hpp"
#include "transform/cast.hpp"
#include "transform/quantize/dequantize_kernels.hpp"
#include "util/shape_util.hpp"

namespace ballast {

DenseWeight dequantize_parts(QuantizeConfig::Scheme scheme, const NamedParts& parts) {
  switch (scheme) {
    case QuantizeConfig::Scheme::int8: return dequantize_int8(parts);
    case QuantizeConfig::Scheme::int4: return dequantize_int4(parts);
    case QuantizeConfig::Scheme::fp8: return dequantize_fp8(parts);
    case QuantizeConfig::Scheme::gptq: return dequantize_gptq(parts);
    case QuantizeConfig::Scheme::awq: return dequantize_awq(parts);
  }
  throw Error(ErrorCode::invalid_argument, "unknown quantization scheme");
}

QuantizedGeometry check_quantized_parts(QuantizeConfig::Scheme scheme, const NamedParts& parts) {
  switch (scheme) {
    case QuantizeConfig::Scheme::int8: return check_int8(parts);
    case QuantizeConfig::Scheme::int4: return check_int4(parts);
    case QuantizeConfig::Scheme::fp8: return check_fp8(parts);
    case QuantizeConfig::Scheme::gptq: return check_gptq(parts);
    case QuantizeConfig::Scheme::awq: return check_awq(parts);
  }
  throw Error(ErrorCode::invalid_argument, "unknown quantization scheme");
}

const Tensor& require_part(const NamedParts& parts, const std::string& name,
                           std::initializer_list<DType> dtypes, size_t rank) {
  auto it = parts.find(name);
  if (it == parts.end() || !it->second)
    throw Error(ErrorCode::not_found, fmt::format("quantized part '{}' is missing", name));
  const Tensor& t = *it->second;
  const bool float_ok = dtypes.size() == 0 && dtype_info(t.dtype()).kind == DTypeKind::floating &&
                        can_cast(t.dtype(), DType::f32);
  bool listed = false;
  for (DType d : dtypes) listed = listed || d == t.dtype();
  if (!float_ok && !listed) {
    std::vector<std::string_view> names;
    for (DType d : dtypes) names.push_back(dtype_name(d));
    throw Error(
        ErrorCode::dtype_mismatch,
        fmt::format("quantized part '{}' has dtype {}, expected {}", t.name(),
                    dtype_name(t.dtype()),
                    names.empty() ? "a float dtype" : fmt::format("{}", fmt::join(names, " or "))));
  }
  if (t.shape().size() != rank)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("quantized part '{}' has shape {}, expected rank {}", t.name(),
                            shape_text(t.shape()), rank));
  return t;
}

void require_shape(bool ok, const Tensor& part, const std::string& what) {
  if (!ok)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("quantized part '{}' of shape {}: {}", part.name(),
                            shape_text(part.shape()), what));
}

std::vector<float> floats_of(const Tensor& part) {
  std::vector<float> out(part.numel());
  if (out.empty()) return out;
  cast_elements(part.dtype(), part.data(), DType::f32, reinterpret_cast<std::byte*>(out.data()),
                out.size());
  return out;
}

}  // namespace ballast
