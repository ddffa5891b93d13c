// Dequantization of ggml block types to f32, bit-exact with ggml's reference kernels
// (ggml-quants.c `dequantize_row_*`) and with gguf-py's `gguf.quants.dequantize`.
//
// Covered: q4_0 q4_1 q5_0 q5_1 q8_0, q2_k q3_k q4_k q5_k q6_k q8_k, tq1_0 tq2_0, iq4_nl
// iq4_xs, mxfp4. Not covered: q8_1 (ggml has no dequantizer for it) and the grid-based
// iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m. Pure functions of their arguments;
// thread-safe, so a caller may dequantize disjoint block ranges of one tensor in parallel.
#pragma once

#include <cstddef>
#include <span>

#include "ballast/dtype.hpp"

namespace ballast {

// True when ggml_dequantize_to_f32 handles `type`.
bool ggml_can_dequantize(DType type);

// Dequantizes whole blocks: out.size() elements (a multiple of the block's element count) from
// exactly out.size() / block_elements * block_bytes bytes of `blocks`. Throws
// Error(invalid_argument) on a size mismatch, Error(unsupported) for a type it cannot handle.
void ggml_dequantize_to_f32(DType type, std::span<const std::byte> blocks, std::span<float> out);

}  // namespace ballast
