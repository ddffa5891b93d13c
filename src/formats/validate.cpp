// Post-parse validation of Index entries (see validate.hpp).
#include "formats/validate.hpp"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ballast/error.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"
#include "util/op_count.hpp"

namespace ballast {
namespace {

[[noreturn]] void fail(ErrorCode code, const TensorEntry& e, std::string message) {
  throw Error(code, std::move(message),
              {.source = e.data ? e.data->name() : std::string(), .tensor = e.name});
}

// Bytes from element 0 to one past the last element reached by a strided view.
uint64_t strided_extent(const TensorEntry& e, uint32_t element_size) {
  uint64_t last = 0;  // index of the farthest element
  for (size_t i = 0; i < e.shape.size(); ++i) {
    if (e.strides[i] < 0) fail(ErrorCode::invalid_format, e, "negative stride");
    auto step =
        checked_mul(static_cast<uint64_t>(e.shape[i] - 1), static_cast<uint64_t>(e.strides[i]));
    auto sum = step ? checked_add(last, *step) : std::nullopt;
    if (!sum) fail(ErrorCode::invalid_format, e, "strides overflow");
    last = *sum;
  }
  auto extent = checked_mul(last + 1, element_size);
  if (!extent) fail(ErrorCode::invalid_format, e, "strides overflow");
  return *extent;
}

constexpr uint64_t kAlwaysAllowedView = 1ULL << 20;

}  // namespace

void check_view_expansion(const TensorEntry& e, const Limits& limits) {
  if (e.strides.empty() || !e.data) return;
  const uint64_t nbytes = e.nbytes();
  const uint64_t storage = e.data->size();
  const uint64_t allowed = std::max(
      kAlwaysAllowedView, checked_mul(storage, limits.max_view_expansion).value_or(UINT64_MAX));
  if (nbytes > allowed)
    fail(ErrorCode::limit_exceeded, e,
         fmt::format("view of {} bytes (shape [{}], strides [{}]) repeats its {}-byte storage "
                     "more than max_view_expansion ({}) times",
                     nbytes, fmt::join(e.shape, ", "), fmt::join(e.strides, ", "), storage,
                     limits.max_view_expansion));
}

void validate_entry(const TensorEntry& e, const Limits& limits) {
  if (!e.data) fail(ErrorCode::invalid_format, e, "tensor has no data source");
  if (e.shape.size() > limits.max_dims)
    fail(ErrorCode::limit_exceeded, e,
         limit_message("rank", e.shape.size(), "max_dims", limits.max_dims));
  auto numel = checked_numel(e.shape);
  if (!numel)
    fail(ErrorCode::invalid_format, e,
         fmt::format("shape [{}] is negative or overflows", fmt::join(e.shape, ", ")));
  auto nbytes = dtype_bytes_for(e.dtype, *numel);
  if (!nbytes)
    fail(ErrorCode::invalid_format, e,
         fmt::format("{} elements do not fill whole {} blocks", *numel, dtype_name(e.dtype)));
  if (*nbytes > limits.max_tensor_bytes)
    fail(ErrorCode::limit_exceeded, e,
         limit_message("tensor size in bytes", *nbytes, "max_tensor_bytes",
                       limits.max_tensor_bytes));
  uint64_t extent = *nbytes;
  if (!e.strides.empty()) {
    if (e.strides.size() != e.shape.size())
      fail(ErrorCode::invalid_format, e, "strides and shape differ in rank");
    uint32_t element_size = dtype_element_size(e.dtype);
    if (element_size == 0 && !e.is_contiguous())
      fail(ErrorCode::unsupported, e,
           fmt::format("strided views of packed {} data", dtype_name(e.dtype)));
    if (*numel > 0 && element_size > 0) extent = strided_extent(e, element_size);
    check_view_expansion(e, limits);
  }
  if (*numel > 0 && !range_inside(e.offset, extent, e.data->size()))
    fail(ErrorCode::invalid_format, e,
         fmt::format("tensor bytes [{}, {}+{}) lie outside the {}-byte data", e.offset, e.offset,
                     extent, e.data->size()));
  if (e.byte_order == ByteOrder::big && dtype_element_size(e.dtype) == 0)
    fail(ErrorCode::unsupported, e, "big-endian packed data");
}

void validate_index(const Index& index, const Limits& limits) {
  if (index.tensors.size() > limits.max_tensors)
    throw Error(ErrorCode::limit_exceeded, limit_message("tensor count", index.tensors.size(),
                                                         "max_tensors", limits.max_tensors));
  std::unordered_set<std::string_view, StringHash, CountedEqual> names;
  for (const auto& e : index.tensors) {
    if (!names.insert(e.name).second) fail(ErrorCode::invalid_format, e, "duplicate tensor name");
    validate_entry(e, limits);
  }
}

}  // namespace ballast
