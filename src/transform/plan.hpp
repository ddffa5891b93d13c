// The load planner: turns (Index entry, ordered transformations) into a LoadPlan before any
// byte is read. View steps (transpose, slice, reshape, shard) fold into a strided view of the
// stored elements, so a slice reads only its rows and a transpose costs no extra copy; value steps
// (cast, scale) become a chain of element kernels run block by block on the way out. A final
// Quantize step makes the materializer produce a dense f32 weight and quantize it into a
// bundle. Shape and dtype errors surface here, naming the step and the shapes.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "ballast/parser.hpp"
#include "ballast/transform.hpp"

namespace ballast {

// A strided view of stored elements: element (i0, i1, ...) lives at
// offset + sum(i_k * strides[k]) * element_size inside data.
struct View {
  std::shared_ptr<ByteSource> data;
  uint64_t offset = 0;
  DType dtype = DType::u8;
  Shape shape;
  std::vector<int64_t> strides;  // elements, one per dim (always filled)
  ByteOrder byte_order = ByteOrder::little;

  bool is_contiguous() const;
  uint64_t numel() const;
};

struct ValueStep {
  enum class Kind : uint8_t { cast, scale };
  Kind kind;
  DType from;
  DType to;
  double factor = 1.0;
};

struct LoadPlan {
  View view;  // what to read, in output element order
  // A fused Shard: the result is these views concatenated along dimension concat_dim, and
  // `view` only describes the result (source, dtype, byte order, shape; row-major strides).
  std::vector<View> pieces;
  int concat_dim = 0;
  std::vector<ValueStep> steps;  // element kernels, in order
  DType out_dtype = DType::u8;
  Shape out_shape;  // may differ from view.shape after a final reshape
  uint64_t out_nbytes = 0;
  // A last Quantize step: out_dtype / out_shape describe the dense f32 weight it consumes.
  std::optional<QuantizeConfig> quantize;

  // What the caller receives: the dense tensor, or a bundle's main part ("qweight").
  DType result_dtype() const;
  Shape result_shape() const;
};

View view_of(const TensorEntry& entry);
// Throws Error(shape_mismatch | dtype_mismatch | unsupported | invalid_argument) naming the
// transformation.
LoadPlan plan_load(const TensorEntry& entry, std::span<const Transformation> steps);

}  // namespace ballast
