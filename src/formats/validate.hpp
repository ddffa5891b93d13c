// Validation every Index passes after its parser, whoever wrote the parser: names unique,
// shapes and dtypes sane, every view's bytes inside its ByteSource. Checked arithmetic only.
#pragma once

#include "ballast/limits.hpp"
#include "ballast/parser.hpp"

namespace ballast {

// A strided view may repeat its storage's bytes (stride 0: torch's expand), so its logical
// size is bounded by the storage: at most Limits::max_view_expansion times the bytes of its
// ByteSource, or 1 MiB, whichever is more. Throws Error(limit_exceeded) naming the tensor.
void check_view_expansion(const TensorEntry& entry, const Limits& limits);

// Throws Error(invalid_format | limit_exceeded) naming the tensor.
void validate_entry(const TensorEntry& entry, const Limits& limits);
void validate_index(const Index& index, const Limits& limits);

}  // namespace ballast
