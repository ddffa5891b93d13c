// The GGUF format (llama.cpp / ggml), versions 2 and 3, little-endian:
//
//   u32  magic "GGUF" (bytes 47 47 55 46)
//   u32  version (2 or 3; 1 used u32 counts and is refused; a big-endian file's version
//        reads as 0x02000000 / 0x03000000 and is refused as unsupported)
//   u64  n_tensors
//   u64  n_kv
//   n_kv x KV pair      key: u64 length + UTF-8 bytes; u32 value type; value
//                       (layout of values in gguf_metadata.hpp)
//   n_tensors x tensor info
//        name: u64 length + bytes; u32 n_dims (<= 4); n_dims x u64 ne[] (ne[0] innermost);
//        u32 ggml type id; u64 offset relative to the data section (a multiple of alignment)
//   padding to a multiple of `general.alignment` (a u32 KV, a nonzero power of two; default 32)
//   data section: the tensors' stored bytes (ggml blocks for quantized types)
//
// The Index reports shapes row-major, outermost first: ne[] reversed (ne = [4096, 32000] is
// shape [32000, 4096]). Quantized tensors keep their block dtype (q4_k, ...): loading returns
// the stored blocks; ggml_dequant.hpp turns them into f32. Index::extra is a JSON object of
// every KV pair, in file order.
//
// Validation before any tensor data is touched: counts bounded by Limits (max_tensors,
// max_metadata_entries, max_string_length, max_header_bytes for everything up to the end of
// the tensor infos, max_dims, max_tensor_bytes), duplicate keys and tensor names refused,
// checked arithmetic for every product and offset, ne[0] a multiple of the type's block, every
// tensor inside the file, no two tensors overlapping, split.* keys consistent with the file
// name. Errors name the source, the tensor and the byte offset.
#pragma once

#include <memory>

#include "ballast/parser.hpp"
#include "formats/gguf/gguf_split.hpp"

namespace ballast {

std::shared_ptr<const FormatParser> make_gguf_parser();

}  // namespace ballast
