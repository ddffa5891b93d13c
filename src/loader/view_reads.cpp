// Reading a strided view range by range (see view_reads.hpp), and planned_reads.
#include "loader/view_reads.hpp"

#include <cstring>
#include <memory>
#include <vector>

#include "ballast/dtype.hpp"
#include "ballast/tensor_parallel.hpp"
#include "util/checked.hpp"

namespace ballast {

bool readable_by_runs(const View& view) {
  return view.is_contiguous() ||
         (dtype_element_size(view.dtype) > 0 && !view.strides.empty() && view.strides.back() == 1);
}

void for_each_read(const View& view, const CoalesceLimits& limits,
                   const std::function<void(std::span<const ViewRun>)>& read) {
  const uint64_t numel = view.numel();
  if (numel == 0) return;
  std::vector<ViewRun> runs;  // the open range's runs
  auto flush = [&] {
    if (!runs.empty()) read(runs);
    runs.clear();
  };
  auto add = [&](uint64_t offset, uint64_t nbytes, uint64_t out) {
    if (!runs.empty()) {
      ViewRun& last = runs.back();
      const uint64_t end = last.offset + last.nbytes;
      if (offset == end) {  // touching runs are one run
        last.nbytes += nbytes;
        return;
      }
      const uint64_t first = runs.front().offset;
      const bool joins = offset > end && offset - end <= limits.max_gap_bytes &&
                         offset + nbytes - first <= limits.max_span_bytes;
      if (!joins) flush();
    }
    runs.push_back({offset, nbytes, out});
  };
  if (view.is_contiguous()) {
    add(view.offset, *dtype_bytes_for(view.dtype, numel), 0);
    return flush();
  }
  const uint64_t element = dtype_element_size(view.dtype);
  const size_t rank = view.shape.size();
  const auto inner = static_cast<uint64_t>(view.shape[rank - 1]);
  const uint64_t rows = numel / inner;
  std::vector<int64_t> index(rank - 1, 0);
  for (uint64_t row = 0; row < rows; ++row) {
    int64_t first = 0;
    for (size_t d = 0; d + 1 < rank; ++d) first += index[d] * view.strides[d];
    add(view.offset + static_cast<uint64_t>(first) * element, inner * element,
        row * inner * element);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < view.shape[d]) break;
      index[d] = 0;
    }
  }
  flush();
}

void read_view_runs(const View& view, std::byte* dst, const CoalesceLimits& limits,
                    const ReadEngineOptions& io) {
  std::unique_ptr<std::byte[]> staging;
  uint64_t staging_size = 0;
  for_each_read(view, limits, [&](std::span<const ViewRun> runs) {
    const ViewRun& head = runs.front();
    if (runs.size() == 1) {
      read_into(*view.data, head.offset, {dst + head.out, head.nbytes}, io);
      return;
    }
    const uint64_t span = runs.back().offset + runs.back().nbytes - head.offset;
    if (span > staging_size) {
      staging = std::make_unique_for_overwrite<std::byte[]>(span);
      staging_size = span;
    }
    read_into(*view.data, head.offset, {staging.get(), span}, io);
    for (const ViewRun& r : runs)
      std::memcpy(dst + r.out, staging.get() + (r.offset - head.offset), r.nbytes);
  });
}

std::vector<ByteRange> planned_reads(DType dtype, const Shape& shape,
                                     std::span<const Transformation> steps,
                                     uint64_t max_gap_bytes) {
  TensorEntry entry;
  entry.dtype = dtype;
  entry.shape = shape;
  const LoadPlan plan = plan_load(entry, steps);
  const std::vector<View> views = plan.pieces.empty() ? std::vector<View>{plan.view} : plan.pieces;
  CoalesceLimits limits;
  limits.max_gap_bytes = max_gap_bytes;
  std::vector<ByteRange> ranges;
  for (const View& view : views) {
    if (view.numel() == 0) continue;
    if (!readable_by_runs(view)) {  // staged whole: the span it covers
      uint64_t last = 0;
      for (size_t d = 0; d < view.shape.size(); ++d)
        last += static_cast<uint64_t>(view.shape[d] - 1) * static_cast<uint64_t>(view.strides[d]);
      ranges.push_back({view.offset, (last + 1) * dtype_element_size(view.dtype)});
      continue;
    }
    for_each_read(view, limits, [&](std::span<const ViewRun> runs) {
      const uint64_t end = runs.back().offset + runs.back().nbytes;
      ranges.push_back({runs.front().offset, end - runs.front().offset});
    });
  }
  return ranges;
}

}  // namespace ballast
