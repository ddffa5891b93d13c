// Limits: the bounds every parser enforces on untrusted input. Crossing one is an
// Error(limit_exceeded) naming the limit; the defaults admit every real checkpoint we know of.
#pragma once

#include <cstdint>

namespace ballast {

struct Limits {
  uint64_t max_header_bytes = 100'000'000;     // safetensors JSON, npy header, GGUF KV area
  uint64_t max_tensors = 1'000'000;            // tensors per file
  uint32_t max_dims = 64;                      // rank of one tensor
  uint64_t max_tensor_bytes = 1ULL << 40;      // one tensor (1 TiB)
  uint64_t max_metadata_entries = 10'000'000;  // metadata keys and array elements in total
  uint64_t max_string_length = 64ULL << 20;    // one name or metadata string
  uint32_t max_json_depth = 64;                // nesting of JSON headers
  uint64_t max_inflated_bytes = 64ULL << 30;   // a compressed member, once inflated
  double max_inflate_ratio = 1100.0;           // inflated / compressed (zip bombs)
  uint64_t max_pickle_bytes = 1ULL << 30;      // a pickle stream
  uint64_t max_pickle_memo = 10'000'000;       // memo entries
  uint64_t max_pickle_stack = 10'000'000;      // stack items
  uint32_t max_pickle_depth = 1000;            // container nesting
  // Bytes one checkpoint's pickles may materialise (values, copies made by allowed calls,
  // storage and tensor records, names and metadata): 16 MiB plus this many per pickle byte...
  uint32_t max_pickle_amplification = 64;
  // ...and never more than this (16 GiB).
  uint64_t max_pickle_materialized_bytes = 16ULL << 30;
  // Logical bytes of a strided view per byte of its storage (stride-0 "expanded" views);
  // views of at most 1 MiB always pass.
  uint32_t max_view_expansion = 64;
};

}  // namespace ballast
