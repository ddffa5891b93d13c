// Transformations a TensorSpec can ask for, applied in order while the tensor loads.
//
// View steps (Transpose, Reshape, Slice) only change which bytes are read and in which order;
// value steps (Cast, Scale, Quantize) change the bytes. Every step is checked against the
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

using Transformation = std::variant<Transpose, Reshape, Cast, Slice, Scale, Quantize>;

// "transpose:0:1", "cast:f16", ... (the CLI's --transform syntax, see parse_transformations).
std::string to_string(const Transformation& step);
// Parses a comma-separated list in the CLI syntax; throws Error(invalid_argument) naming the
// offending step.
std::vector<Transformation> parse_transformations(std::string_view list);

}  // namespace ballast
