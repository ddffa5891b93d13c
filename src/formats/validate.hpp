// Validation every Index passes after its parser, whoever wrote the parser: names unique,
// shapes and dtypes sane, every view's bytes inside its ByteSource. Checked arithmetic only.
#pragma once

#include "ballast/limits.hpp"
#include "ballast/parser.hpp"

namespace ballast {

// Throws Error(invalid_format | limit_exceeded) naming the tensor.
void validate_entry(const TensorEntry& entry, const Limits& limits);
void validate_index(const Index& index, const Limits& limits);

}  // namespace ballast
