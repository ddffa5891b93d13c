// Small shape helpers shared by the planner, the loader and the format registry.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ballast/tensor.hpp"

namespace ballast {

// "[2, 3, 4]".
std::string shape_text(const Shape& shape);
// True when `strides` (elements) are the row-major strides of `shape` (size-1 dims ignored);
// false when the strides cannot be row-major because their products overflow.
bool is_row_major(std::span<const int64_t> shape, std::span<const int64_t> strides);

}  // namespace ballast
