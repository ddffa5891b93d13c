// The safetensors format (https://github.com/huggingface/safetensors):
//
//   [8 bytes]  N, little-endian u64: length of the JSON header
//   [N bytes]  JSON object, UTF-8, possibly padded with spaces:
//                "__metadata__": {string: string}          (optional)
//                "<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}
//   [rest]     the data buffer; offsets are relative to its start
//
// Validation before any data is touched: N capped by Limits::max_header_bytes and inside the
// file, JSON well formed and bounded in depth, duplicate names refused, every dtype known,
// end - begin == bytes of the shape (checked arithmetic), and the ranges, sorted, tile the
// buffer exactly: no gaps, no overlaps, nothing past the end.
#pragma once

#include <memory>

#include "ballast/parser.hpp"

namespace ballast {

std::shared_ptr<const FormatParser> make_safetensors_parser();

}  // namespace ballast
