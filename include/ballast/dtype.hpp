// DType: every element type ballast can name, from f64 down to packed 4-bit and GGUF blocks.
//
// One rule sizes every type: a dtype stores `block_elements` elements in `block_bytes` bytes
// (f32: 1 in 4; i4: 2 in 1; f6_e2m3: 4 in 3; q4_k: 256 in 144). A tensor of n elements takes
// n / block_elements * block_bytes bytes, and n must be a multiple of block_elements.
// All functions here are pure and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ballast {

enum class DType : uint8_t {
  // floating point
  f64,
  f32,
  f16,
  bf16,
  f8_e4m3,
  f8_e5m2,
  f8_e4m3fnuz,
  f8_e5m2fnuz,
  f8_e8m0,
  f6_e2m3,
  f6_e3m2,
  f4_e2m1,
  // integers and bool
  i64,
  i32,
  i16,
  i8,
  i4,
  u64,
  u32,
  u16,
  u8,
  u4,
  boolean,
  // complex (interleaved re, im)
  c64,
  c128,
  // ggml / GGUF block-quantized types
  q4_0,
  q4_1,
  q5_0,
  q5_1,
  q8_0,
  q8_1,
  q2_k,
  q3_k,
  q4_k,
  q5_k,
  q6_k,
  q8_k,
  iq2_xxs,
  iq2_xs,
  iq3_xxs,
  iq1_s,
  iq4_nl,
  iq3_s,
  iq2_s,
  iq4_xs,
  iq1_m,
  tq1_0,
  tq2_0,
  mxfp4,
};

enum class DTypeKind : uint8_t { floating, signed_int, unsigned_int, boolean, complex, quantized };

struct DTypeInfo {
  std::string_view name;    // canonical lowercase name ("bf16", "bool", "q4_k")
  uint32_t block_elements;  // elements per block (1 for byte-or-wider scalar types)
  uint32_t block_bytes;     // bytes per block
  DTypeKind kind;
};

const DTypeInfo& dtype_info(DType dtype);
inline std::string_view dtype_name(DType dtype) { return dtype_info(dtype).name; }
// Parses a canonical name ("f32", "bool", "q8_0"); also accepts "bfloat16"-style aliases
// (float32, float16, bfloat16, float64, int8..int64, uint8..uint64, bool).
std::optional<DType> parse_dtype(std::string_view name);
// Every dtype, in declaration order.
std::span<const DType> all_dtypes();
// "unknown dtype 'NAME'; valid: f32, f16, ...": the error for a name parse_dtype refused.
std::string unknown_dtype_message(std::string_view name);

// Bytes taken by `elements` elements, or nullopt when elements is not a multiple of the block
// or the product overflows.
std::optional<uint64_t> dtype_bytes_for(DType dtype, uint64_t elements);

// Size in bytes of one element for types whose element is a whole number of bytes; 0 for
// packed and block types.
uint32_t dtype_element_size(DType dtype);

}  // namespace ballast
