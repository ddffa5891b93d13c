// AWQ packing (see awq_quantize.hpp).
#include "transform/quantize/awq/awq_quantize.hpp"

#include <cstdint>

#include "transform/quantize/group_params.hpp"
#include "transform/quantize/word_packing.hpp"

namespace ballast {

void quantize_awq(std::span<const float> weight, WeightDims dims, const QuantizeConfig& config,
                  const PartBuffers& out) {
  constexpr int kBits = 4, kMaxq = 15;
  const int64_t group = config.group_size;
  const int64_t groups = dims.in / group;
  const int64_t words = dims.out / 8;
  const GroupParams params = f16_group_params(
      weight, dims, group, kMaxq, config.zero_point ? GroupRule::awq_zp : GroupRule::awq_sym);
  auto qweight = out.as<uint32_t>("qweight");
  auto qzeros = out.as<uint32_t>("qzeros");
  auto scales = out.as<uint16_t>("scales");
  for (int64_t o = 0; o < dims.out; ++o) {
    const int nibble = kAwqNibbleOf[static_cast<size_t>(o % 8)];
    for (int64_t g = 0; g < groups; ++g) {
      const size_t k = static_cast<size_t>(o * groups + g);
      scales[g * dims.out + o] = params.scale_bits[k];
      put_field(qzeros[g * words + o / 8], nibble, kBits, static_cast<uint32_t>(params.zeros[k]));
    }
    for (int64_t i = 0; i < dims.in; ++i) {
      const size_t k = static_cast<size_t>(o * groups + i / group);
      const int q =
          quantize_affine(weight[o * dims.in + i], params.scales[k], params.zeros[k], kMaxq);
      put_field(qweight[i * words + o / 8], nibble, kBits, static_cast<uint32_t>(q));
    }
  }
}

}  // namespace ballast
