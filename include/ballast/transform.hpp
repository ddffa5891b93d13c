// Transformations a TensorSpec can ask for, applied in order while the tensor loads.
//
// View steps (Transpose, Reshape, Slice, Shard) only change which bytes are read and in which
// order; value steps (Cast, Scale, Quantize) change the bytes. Every step is checked against the
// tensor's dtype and shape before any byte is read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ballast/dtype.hpp"
#include "ballast/tensor.hpp"

namespace ballast {

struct Transpose {
  int dim0 = 0;
  int dim1 = 1;
};

struct Reshape {
  Shape shape;  // one entry may be -1 (inferred)
};

struct Cast {
  DType dtype = DType::f32;
};

// Python-style slice without step along `dim`; negative indices count from the end.
struct Slice {
  int dim = 0;
  std::optional<int64_t> start;
  std::optional<int64_t> end;
};

struct Scale {
  double factor = 1.0;
};

// Tensor-parallel sharding: keeps rank `rank`'s part of dimension `dim` out of `world` ranks,
// exactly torch.chunk(t, world, dim)[rank] (chunks of ceil(n / world); trailing ranks may get
// fewer or zero). A fused tensor (qkv, gate_up) lists its `parts` along `dim` (they sum to the
// extent): each part is chunked on its own and the rank's pieces are concatenated in part
// order, as vLLM's QKV / merged-column layers do. Only the rank's bytes are read. See
// docs/tensor_parallel.md and ballast/tensor_parallel.hpp.
struct Shard {
  int rank = 0;
  int world = 1;
  int dim = 0;
  std::vector<int64_t> parts;  // empty: the whole dimension is one part
};

struct QuantizeConfig {
  enum class Scheme : uint8_t { int8, int4, fp8, gptq, awq };
  Scheme scheme = Scheme::int8;
  bool symmetric = true;             // int8: symmetric (no zero point) or asymmetric
  int group_size = 128;              // int4, gptq: elements per group along the input dimension
  DType fp8_dtype = DType::f8_e4m3;  // fp8: f8_e4m3 or f8_e5m2
  int bits = 4;                      // gptq, awq
  bool desc_act = false;             // gptq: activation-order groups (emits g_idx)
  bool zero_point = true;            // awq
};

struct Quantize {
  QuantizeConfig config;
};

using Transformation = std::variant<Transpose, Reshape, Cast, Slice, Scale, Quantize, Shard>;

// "transpose:0:1", "cast:f16", ... (the CLI's --transform syntax, see parse_transformations).
std::string to_string(const Transformation& step);
// Parses a comma-separated list in the CLI syntax; throws Error(invalid_argument) naming the
// offending step.
std::vector<Transformation> parse_transformations(std::string_view list);

}  // namespace ballast
