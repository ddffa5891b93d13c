// Dequantization of FP8 weights: x = q * scale, where the scale is a per-tensor scalar (ballast's
// "scale", compressed-tensors' "weight_scale"), one per output row ([out] or [out, 1]), or one
// per block of a 2-D grid ([ceil(out / B0), ceil(in / B1)], DeepSeek's "weight_scale_inv", which
// despite its name multiplies too). A block is 128 wide when 128 tiles the grid (DeepSeek's
// 128 x 128), else extent / blocks when that divides.
#include <algorithm>
#include <cstdint>

#include "ballast/error.hpp"

#include "transform/float_bits.hpp"
#include "transform/quantize/dequantize_kernels.hpp"

namespace ballast {
namespace {

int64_t block_extent(int64_t extent, int64_t blocks) {
  if (blocks == 1) return std::max<int64_t>(extent, 1);  // also an empty weight
  if ((extent + 127) / 128 == blocks) return 128;
  return extent % blocks == 0 ? extent / blocks : extent;
}

}  // namespace

QuantizedGeometry check_fp8(const NamedParts& parts) {
  const Tensor& q = require_part(parts, "qweight", {DType::f8_e4m3, DType::f8_e5m2}, 2);
  const WeightDims d{q.shape()[0], q.shape()[1]};
  auto it = parts.find("scale");
  if (it == parts.end()) throw Error(ErrorCode::not_found, "quantized part 'scale' is missing");
  const Tensor& scale_part =
      require_part(parts, "scale", {}, it->second ? it->second->shape().size() : 0);
  const Shape& s = scale_part.shape();
  int64_t rows = 1, cols = 1;  // the scale grid
  if (scale_part.numel() != 1) {
    rows = s[0];
    cols = s.size() == 2 ? s[1] : 1;
    require_shape(s.size() <= 2 && rows > 0 && cols > 0 && rows <= d.out && cols <= d.in,
                  scale_part, "expected a scalar, [out], [out, 1] or a block grid");
  }
  const int64_t row_block = block_extent(d.out, rows), col_block = block_extent(d.in, cols);
  auto tiles = [](int64_t extent, int64_t block, int64_t blocks) {
    return blocks == 1 || (extent + block - 1) / block == blocks;
  };
  require_shape(tiles(d.out, row_block, rows) && tiles(d.in, col_block, cols), scale_part,
                "does not tile the weight");
  return {.dims = d,
          .scale_rows = rows,
          .scale_cols = cols,
          .row_block = row_block,
          .col_block = col_block};
}

DenseWeight dequantize_fp8(const NamedParts& parts) {
  const QuantizedGeometry geometry = check_fp8(parts);
  const WeightDims d = geometry.dims;
  const int64_t cols = geometry.scale_cols, row_block = geometry.row_block,
                col_block = geometry.col_block;
  const Tensor& q = *parts.at("qweight");
  const auto scales = floats_of(*parts.at("scale"));
  const MiniFloat format = q.dtype() == DType::f8_e5m2 ? kE5M2 : kE4M3;
  const auto codes = q.as<uint8_t>();
  DenseWeight out{d, std::vector<float>(codes.size())};
  for (int64_t r = 0; r < d.out; ++r)
    for (int64_t i = 0; i < d.in; ++i) {
      const size_t k = static_cast<size_t>(r * d.in + i);
      const float scale = scales[static_cast<size_t>((r / row_block) * cols + i / col_block)];
      out.values[k] = minifloat_to_f32(codes[k], format) * scale;
    }
  return out;
}

}  // namespace ballast
