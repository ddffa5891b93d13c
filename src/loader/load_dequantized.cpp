// Loading quantized checkpoints as dense tensors (see include/ballast/dequantize.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ballast/dequantize.hpp"
#include "ballast/error.hpp"
#include "loader/device_dequantize.hpp"
#include "transform/cast.hpp"
#include "transform/quantize/dequantize.hpp"

namespace ballast {
namespace {

using Scheme = QuantizeConfig::Scheme;

// A canonical part and the stored suffixes that may hold it, in order of preference.
struct PartNames {
  std::string part;
  std::vector<std::string> suffixes;
  bool optional = false;
};

std::vector<PartNames> part_names(Scheme scheme) {
  switch (scheme) {
    case Scheme::gptq:
      return {{"qweight", {"qweight"}},
              {"qzeros", {"qzeros"}},
              {"scales", {"scales"}},
              {"g_idx", {"g_idx"}, true}};
    case Scheme::awq:
      return {{"qweight", {"qweight"}}, {"qzeros", {"qzeros"}}, {"scales", {"scales"}}};
    case Scheme::fp8:
      return {{"qweight", {"weight", "qweight"}},
              {"scale", {"weight_scale", "weight_scale_inv", "scale"}}};
    case Scheme::int8:
      return {{"qweight", {"qweight"}}, {"scales", {"scales"}}, {"qzeros", {"qzeros"}, true}};
    case Scheme::int4:
      return {{"qweight", {"qweight"}}, {"scales", {"scales"}}, {"zeros", {"zeros"}}};
  }
  return {};
}

void require_dense_dtype(DType dtype) {
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("dequantize produces f32, f16 or bf16, not {}", dtype_name(dtype)));
}

TensorRef dense_tensor(const std::string& name, const DenseWeight& w, DType dtype) {
  const uint64_t nbytes = *dtype_bytes_for(dtype, w.values.size());
  auto storage = make_host_buffer(nbytes, 64);
  cast_elements(DType::f32, reinterpret_cast<const std::byte*>(w.values.data()), dtype,
                storage->data(), w.values.size());
  return std::make_shared<Tensor>(name, dtype, Shape{w.dims.out, w.dims.in}, storage, 0, nbytes);
}

}  // namespace

TensorRef load_dequantized(WeightLoader& loader, const DequantizeSpec& spec) {
  require_dense_dtype(spec.dtype);
  const WeightMetadata meta = loader.get_metadata(spec.source);
  std::vector<std::string> parts;
  std::vector<TensorSpec> specs;
  for (const PartNames& names : part_names(spec.scheme)) {
    std::string found;
    for (const auto& suffix : names.suffixes)
      if (meta.tensors.contains(spec.base + "." + suffix)) {
        found = spec.base + "." + suffix;
        break;
      }
    if (found.empty() && names.optional) continue;
    if (found.empty())
      throw Error(ErrorCode::not_found,
                  fmt::format("no quantized part '{}': looked for {}.{{{}}}", names.part, spec.base,
                              fmt::join(names.suffixes, ",")),
                  {.source = describe(spec.source), .tensor = spec.base});
    parts.push_back(names.part);
    specs.push_back(TensorSpec{.name = found, .device = spec.device, .source = spec.source});
  }
  const auto loaded = loader.load_tensors(std::move(specs));
  NamedParts named;
  for (size_t i = 0; i < parts.size(); ++i) named[parts[i]] = loaded[i];
  try {
    if (!spec.device.is_host())
      return dequantize_on_device(spec.scheme, named, spec.dtype, spec.base);
    return dense_tensor(spec.base, dequantize_parts(spec.scheme, named), spec.dtype);
  } catch (Error& e) {
    e.with_source(describe(spec.source));
    e.with_tensor(spec.base);
    throw;
  }
}

TensorRef dequantize(const Tensor& bundle, QuantizeConfig::Scheme scheme, DType dtype) {
  require_dense_dtype(dtype);
  try {
    return dense_tensor(bundle.name(), dequantize_parts(scheme, bundle.parts()), dtype);
  } catch (Error& e) {
    e.with_tensor(bundle.name());
    throw;
  }
}

}  // namespace ballast
