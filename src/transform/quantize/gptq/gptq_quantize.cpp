// GPTQ round-to-nearest packing (see gptq_quantize.hpp).
#include "transform/quantize/gptq/gptq_quantize.hpp"

#include <cstdint>

#include "transform/quantize/group_params.hpp"
#include "transform/quantize/word_packing.hpp"

namespace ballast {

void quantize_gptq(std::span<const float> weight, WeightDims dims, const QuantizeConfig& config,
                   const PartBuffers& out) {
  const int bits = config.bits;
  const int maxq = (1 << bits) - 1;
  const int64_t group = config.group_size;
  const GroupParams params = f16_group_params(weight, dims, group, maxq, GroupRule::gptq);
  auto qweight = out.as<uint32_t>("qweight");
  auto qzeros = out.as<uint32_t>("qzeros");
  auto scales = out.as<uint16_t>("scales");
  const int64_t groups = dims.in / group;
  const int64_t zero_words = dims.out * bits / 32;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t o = 0; o < dims.out; ++o) {
      const size_t k = static_cast<size_t>(o * groups + g);
      scales[g * dims.out + o] = params.scale_bits[k];
      const uint32_t zero = static_cast<uint32_t>(params.zeros[k]);
      put_streamed(&qzeros[g * zero_words], 1, o, bits, zero - 1);
    }
  for (int64_t o = 0; o < dims.out; ++o)
    for (int64_t i = 0; i < dims.in; ++i) {
      const size_t k = static_cast<size_t>(o * groups + i / group);
      const int q =
          quantize_affine(weight[o * dims.in + i], params.scales[k], params.zeros[k], maxq);
      put_streamed(&qweight[o], dims.out, i, bits, static_cast<uint32_t>(q));
    }
  if (config.desc_act) {
    auto g_idx = out.as<int32_t>("g_idx");
    for (int64_t i = 0; i < dims.in; ++i) g_idx[i] = static_cast<int32_t>(i / group);
  }
}

}  // namespace ballast
