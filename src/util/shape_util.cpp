// Small shape helpers (see shape_util.hpp).
#include "util/shape_util.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ballast {

std::string shape_text(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

bool is_row_major(std::span<const int64_t> shape, std::span<const int64_t> strides) {
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    if (__builtin_mul_overflow(expected, shape[i], &expected)) return false;
  }
  return true;
}

}  // namespace ballast
