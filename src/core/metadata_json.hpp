// MetadataValue from JSON text: how the metadata of formats whose parsers write JSON
// (safetensors, ONNX, PyTorch, NumPy, a shard index's "metadata") becomes typed values.
// The rendering the other way, to_json, is public (ballast/metadata_value.hpp).
#pragma once

#include <cstdint>
#include <string_view>

#include "ballast/metadata_value.hpp"

namespace ballast {

// The value of JSON text, members in their order (a key given twice: its first place, its last
// value): integers as i64 (u64 beyond its range), other numbers as f64, arrays of one scalar
// kind kept compactly. Text that is not valid JSON or nests deeper than `max_depth` gives null.
// O(n log n) in the number of keys of an object, linear otherwise (metadata_from_json.cpp).
MetadataValue metadata_from_json(std::string_view text, uint32_t max_depth);

}  // namespace ballast
