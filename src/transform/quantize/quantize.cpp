// Quantize dispatch and bundle assembly (see quantize.hpp).
#include "transform/quantize/quantize.hpp"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "transform/quantize/awq/awq_quantize.hpp"
#include "transform/quantize/fp8/fp8_quantize.hpp"
#include "transform/quantize/gptq/gptq_quantize.hpp"
#include "transform/quantize/int4/int4_quantize.hpp"
#include "transform/quantize/int8/int8_quantize.hpp"
#include "transform/quantize/quantized_layout.hpp"
#include "util/checked.hpp"

namespace ballast {
namespace {

using Scheme = QuantizeConfig::Scheme;

void require_finite(std::span<const float> values) {
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      throw Error(
          ErrorCode::unsupported,
          fmt::format("cannot quantize a non-finite value ({} at element {})", values[i], i));
}

void run_kernel(std::span<const float> weight, WeightDims dims, const QuantizeConfig& config,
                const PartBuffers& out) {
  switch (config.scheme) {
    case Scheme::int8: return quantize_int8(weight, dims, config.symmetric, out);
    case Scheme::int4: return quantize_int4(weight, dims, config.group_size, out);
    case Scheme::fp8: return quantize_fp8(weight, config.fp8_dtype, out);
    case Scheme::gptq: return quantize_gptq(weight, dims, config, out);
    case Scheme::awq: return quantize_awq(weight, dims, config, out);
  }
}

}  // namespace

std::shared_ptr<Tensor> quantize_weight(const Tensor& dense, const QuantizeConfig& config,
                                        const std::string& name, TensorFactory& factory,
                                        size_t alignment) {
  const auto layout = quantized_layout(config, dense.shape());
  const auto weight = dense.as<float>();
  require_finite(weight);
  PartBuffers buffers;
  std::map<std::string, TensorRef> parts;
  for (const PartLayout& part : layout) {
    const uint64_t nbytes = *dtype_bytes_for(part.dtype, *checked_numel(part.shape));
    auto storage = factory.allocate(nbytes, alignment);
    std::memset(storage->data(), 0, nbytes);  // the packers OR fields into zeroed words
    buffers.add(part.name, {storage->data(), static_cast<size_t>(nbytes)});
    parts[part.name] = std::make_shared<Tensor>(name + "." + part.name, part.dtype, part.shape,
                                                storage, 0, nbytes);
  }
  run_kernel(weight, {dense.shape()[0], dense.shape()[1]}, config, buffers);
  const Tensor& main = *parts.at("qweight");
  auto bundle =
      std::make_shared<Tensor>(name, main.dtype(), main.shape(), main.storage(), 0, main.nbytes());
  bundle->set_parts(std::move(parts));
  return bundle;
}

}  // namespace ballast
