// The load planner (see plan.hpp).
#include "transform/plan.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ballast/error.hpp"
#include "ballast/tensor_parallel.hpp"
#include "transform/cast.hpp"
#include "transform/quantize/quantized_layout.hpp"
#include "util/checked.hpp"
#include "util/shape_util.hpp"

namespace ballast {
namespace {

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    // Only an empty shape (a 0 somewhere) can overflow here, and its strides are never used.
    if (__builtin_mul_overflow(s, shape[i], &s)) s = 0;
  }
  return strides;
}

class Planner {
 public:
  Planner(const TensorEntry& entry) : plan_{} {
    plan_.view = view_of(entry);
    plan_.out_dtype = entry.dtype;
  }

  LoadPlan run(std::span<const Transformation> steps) {
    for (const auto& step : steps) {
      current_ = to_string(step);
      if (plan_.quantize) fail(ErrorCode::unsupported, "quantize must be the last step");
      std::visit([this](const auto& s) { apply(s); }, step);
    }
    plan_.out_shape = final_shape_ ? *final_shape_ : plan_.view.shape;
    plan_.out_nbytes = dtype_bytes_for(plan_.out_dtype, plan_.view.numel()).value_or(0);
    return std::move(plan_);
  }

 private:
  [[noreturn]] void fail(ErrorCode code, const std::string& why) const {
    throw Error(code, fmt::format("transformation '{}': {}", current_, why));
  }

  int normalize_dim(int dim) const {
    const int rank = static_cast<int>(plan_.view.shape.size());
    int d = dim < 0 ? dim + rank : dim;
    if (d < 0 || d >= rank)
      fail(ErrorCode::shape_mismatch, fmt::format("dimension {} is out of range for shape {}", dim,
                                                  shape_text(plan_.view.shape)));
    return d;
  }

  void require_view_step_allowed() const {
    if (final_shape_)
      fail(ErrorCode::unsupported, "a view step after a reshape of a non-contiguous view");
    if (!plan_.pieces.empty())
      fail(ErrorCode::unsupported, "a view step after a shard of a fused tensor");
  }

  bool packed() const { return dtype_element_size(plan_.view.dtype) == 0; }

  void apply(const Transpose& t) {
    require_view_step_allowed();
    int a = normalize_dim(t.dim0), b = normalize_dim(t.dim1);
    if (packed() && a != b)
      fail(ErrorCode::unsupported, fmt::format("cannot transpose packed {} data; cast it first",
                                               dtype_name(plan_.view.dtype)));
    std::swap(plan_.view.shape[a], plan_.view.shape[b]);
    std::swap(plan_.view.strides[a], plan_.view.strides[b]);
  }

  void apply(const Slice& s) {
    require_view_step_allowed();
    int d = normalize_dim(s.dim);
    int64_t n = plan_.view.shape[d];
    auto clamp = [n](int64_t i) { return std::clamp(i < 0 ? i + n : i, int64_t{0}, n); };
    int64_t start = s.start ? clamp(*s.start) : 0;
    int64_t end = s.end ? clamp(*s.end) : n;
    if (end < start) end = start;
    narrow(plan_.view, d, start, end);
  }

  // Keeps [start, end) of dimension d of `view` (bounds already inside the extent).
  void narrow(View& view, int d, int64_t start, int64_t end) const {
    if (packed()) {
      // Packed data can only be cut along whole rows of a contiguous view.
      bool outer = d == 0 && view.is_contiguous();
      auto row_elems = checked_numel(std::span(view.shape).subspan(1));
      auto row_bytes = outer && row_elems ? dtype_bytes_for(view.dtype, *row_elems) : std::nullopt;
      if (!row_bytes)
        fail(ErrorCode::unsupported,
             fmt::format("packed {} data can only be cut along whole rows of dimension 0 (a "
                         "quantized block cannot be split)",
                         dtype_name(view.dtype)));
      view.offset += static_cast<uint64_t>(start) * *row_bytes;
    } else {
      view.offset += static_cast<uint64_t>(start) * static_cast<uint64_t>(view.strides[d]) *
                     dtype_element_size(view.dtype);
    }
    view.shape[d] = end - start;
  }

  void apply(const Shard& s) {
    require_view_step_allowed();
    if (s.world < 1 || s.rank < 0 || s.rank >= s.world)
      fail(ErrorCode::invalid_argument,
           fmt::format("rank {} is not in 0..world-1 for world size {}", s.rank, s.world));
    const int d = normalize_dim(s.dim);
    const int64_t n = plan_.view.shape[d];
    std::vector<int64_t> parts = s.parts.empty() ? std::vector<int64_t>{n} : s.parts;
    int64_t total = 0;
    for (int64_t p : parts)
      if (p < 0 || __builtin_add_overflow(total, p, &total))
        fail(ErrorCode::shape_mismatch, "part sizes must be non-negative");
    if (total != n)
      fail(ErrorCode::shape_mismatch,
           fmt::format("parts {} sum to {}, not to dimension {}'s extent {} of shape {}",
                       fmt::join(parts, "+"), total, d, n, shape_text(plan_.view.shape)));
    // The rank's piece of each part, in part order; empty pieces are dropped.
    std::vector<std::pair<int64_t, int64_t>> ranges;
    int64_t base = 0;
    for (int64_t p : parts) {
      const ChunkRange r = chunk_range(p, s.rank, s.world);
      if (r.end > r.start) ranges.emplace_back(base + r.start, base + r.end);
      base += p;
    }
    if (ranges.size() <= 1) {
      const auto [start, end] = ranges.empty() ? std::pair<int64_t, int64_t>{0, 0} : ranges[0];
      narrow(plan_.view, d, start, end);
      return;
    }
    int64_t extent = 0;
    for (const auto& [start, end] : ranges) {
      View piece = plan_.view;
      narrow(piece, d, start, end);
      plan_.pieces.push_back(std::move(piece));
      extent += end - start;
    }
    plan_.concat_dim = d;
    plan_.view.shape[d] = extent;
    plan_.view.strides = row_major_strides(plan_.view.shape);
  }

  void apply(const Reshape& r) {
    require_view_step_allowed();
    Shape target = r.shape;
    uint64_t numel = plan_.view.numel();
    int inferred = -1;
    uint64_t known = 1;
    for (size_t i = 0; i < target.size(); ++i) {
      if (target[i] == -1) {
        if (inferred >= 0) fail(ErrorCode::invalid_argument, "more than one -1 dimension");
        inferred = static_cast<int>(i);
      } else if (target[i] < 0) {
        fail(ErrorCode::invalid_argument, "negative dimension");
      } else {
        auto next = checked_mul(known, static_cast<uint64_t>(target[i]));
        if (!next) fail(ErrorCode::shape_mismatch, "shape overflows");
        known = *next;
      }
    }
    if (inferred >= 0) {
      if (known == 0 || numel % known != 0)
        fail(ErrorCode::shape_mismatch,
             fmt::format("cannot infer a dimension of {} from {} elements", shape_text(target),
                         numel));
      target[inferred] = static_cast<int64_t>(numel / known);
      known = numel;
    }
    if (known != numel)
      fail(ErrorCode::shape_mismatch,
           fmt::format("{} elements of shape {} cannot become shape {}", numel,
                       shape_text(plan_.view.shape), shape_text(target)));
    if (plan_.view.is_contiguous()) {
      plan_.view.shape = target;
      plan_.view.strides = row_major_strides(target);
    } else {
      final_shape_ = target;  // relabel the contiguous output; later view steps are refused
    }
  }

  void apply(const Cast& c) {
    if (!can_cast(plan_.out_dtype, c.dtype))
      fail(ErrorCode::unsupported,
           fmt::format("no cast from {} to {}", dtype_name(plan_.out_dtype), dtype_name(c.dtype)));
    if (c.dtype != plan_.out_dtype)
      plan_.steps.push_back({ValueStep::Kind::cast, plan_.out_dtype, c.dtype, 1.0});
    plan_.out_dtype = c.dtype;
  }

  void apply(const Scale& s) {
    if (!can_scale(plan_.out_dtype))
      fail(ErrorCode::dtype_mismatch, fmt::format("scale needs a float tensor, got {}; cast first",
                                                  dtype_name(plan_.out_dtype)));
    plan_.steps.push_back({ValueStep::Kind::scale, plan_.out_dtype, plan_.out_dtype, s.factor});
  }

  void apply(const Quantize& q) {
    const DTypeKind kind = dtype_info(plan_.out_dtype).kind;
    if ((kind != DTypeKind::floating && kind != DTypeKind::quantized) ||
        !can_cast(plan_.out_dtype, DType::f32))
      fail(ErrorCode::dtype_mismatch,
           fmt::format("quantize needs a float tensor, got {}", dtype_name(plan_.out_dtype)));
    try {
      quantized_layout(q.config, final_shape_ ? *final_shape_ : plan_.view.shape);
    } catch (const Error& e) {
      fail(e.code(), e.message());
    }
    apply(Cast{DType::f32});
    plan_.quantize = q.config;
  }

  LoadPlan plan_;
  std::optional<Shape> final_shape_;
  std::string current_;
};

}  // namespace

DType LoadPlan::result_dtype() const {
  return quantize ? quantized_layout(*quantize, out_shape).front().dtype : out_dtype;
}

Shape LoadPlan::result_shape() const {
  return quantize ? quantized_layout(*quantize, out_shape).front().shape : out_shape;
}

bool View::is_contiguous() const { return is_row_major(shape, strides); }

uint64_t View::numel() const { return checked_numel(shape).value_or(0); }

View view_of(const TensorEntry& entry) {
  View v;
  v.data = entry.data;
  v.offset = entry.offset;
  v.dtype = entry.dtype;
  v.shape = entry.shape;
  v.strides = entry.strides.empty() ? row_major_strides(entry.shape) : entry.strides;
  v.byte_order = entry.byte_order;
  return v;
}

LoadPlan plan_load(const TensorEntry& entry, std::span<const Transformation> steps) {
  return Planner(entry).run(steps);
}

}  // namespace ballast
