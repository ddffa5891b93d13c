// The two containers torch.save writes around its pickle:
//  - zip (torch >= 1.6): records <root>/data.pkl, <root>/data/<key> (one per storage, stored
//    64-byte aligned, so tensors map zero-copy), <root>/version, and from torch 2.x
//    <root>/byteorder, <root>/.data/serialization_id, .format_version, .storage_alignment.
//    <root> is any folder name (torch uses the file's stem, "archive" in newer versions).
//  - legacy (_use_new_zipfile_serialization=False): five pickles in a row (magic number,
//    protocol version 1001, sys_info, the object, the sorted storage keys), then each storage
//    as an 8-byte element count followed by its bytes, in key order.
#pragma once

#include <span>

#include "ballast/parser.hpp"

namespace ballast {

bool looks_like_torch_zip(std::span<const std::byte> head);
bool looks_like_torch_legacy(std::span<const std::byte> head);

Index parse_torch_zip(const ParseContext& context);
Index parse_torch_legacy(const ParseContext& context);

}  // namespace ballast
