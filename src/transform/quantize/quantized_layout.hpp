// The shapes and dtypes of a quantized bundle's parts, derived from a QuantizeConfig and the
// dense weight's shape before any byte is read. The planner uses it to check a Quantize step
// (rank, group size, bits) and to report the bundle's main tensor; the kernels use it to size
// their outputs. Layouts are documented in docs/transforms.md.
#pragma once

#include <numeric>
#include <string>
#include <vector>

#include "ballast/transform.hpp"

namespace ballast {

// A torch Linear weight [out_features, in_features].
struct WeightDims {
  int64_t out = 0;
  int64_t in = 0;
};

struct PartLayout {
  std::string name;  // "qweight", "scales", "qzeros", "zeros", "scale", "g_idx"
  DType dtype;
  Shape shape;
};

// Validates `config` for a dense weight of `shape` and returns its parts, the main one
// ("qweight") first. Throws Error(shape_mismatch) for a rank other than 2 or a group size
// that does not divide the packed dimension, Error(unsupported) for unsupported bits,
// Error(invalid_argument) for a non-positive group size or a bad fp8 dtype.
std::vector<PartLayout> quantized_layout(const QuantizeConfig& config, const Shape& shape);

// The fewest values that fill whole int32 words at `bits` per value (8 at 4 bits, 32 at 3 bits):
// a packed dimension must be a multiple of it.
inline int values_per_whole_words(int bits) { return 32 / std::gcd(bits, 32); }

}  // namespace ballast
