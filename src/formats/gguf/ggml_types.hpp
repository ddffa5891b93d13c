// ggml tensor type ids (the `type` field of a GGUF tensor info) and the ballast DType each one
// maps to, with ggml's own block geometry (ggml.h `enum ggml_type`, ggml-common.h block structs).
//
// Ids that ggml once used and removed (4, 5: Q4_2/Q4_3; 31-33: Q4_0_4_4/4_8/8_8; 36-38:
// IQ4_NL_4_4/4_8/8_8) and ids past 39 are not in the table. Pure data; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "ballast/dtype.hpp"

namespace ballast {

struct GgmlType {
  uint32_t id;              // GGML_TYPE_* value
  std::string_view name;    // ggml's name ("Q4_K", "F16")
  DType dtype;              // the canonical ballast dtype (lowercase name: "q4_k", "f16")
  uint32_t block_elements;  // ggml_blck_size
  uint32_t block_bytes;     // ggml_type_size
};

// The entry for `id`, or nullopt for an unknown or removed id.
std::optional<GgmlType> find_ggml_type(uint32_t id);
// The ggml id of a DType that GGUF can store, or nullopt (u16, bool, c64, f8, ...).
std::optional<uint32_t> ggml_type_id(DType dtype);
// Every known type, in id order.
std::span<const GgmlType> ggml_types();

}  // namespace ballast
