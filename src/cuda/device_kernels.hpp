// Host-callable launchers of ballast's CUDA kernels: the transforms of a load (casts, scale,
// GGUF block dequantization, GPTQ / AWQ / FP8 / int8 / int4 dequantization, strided gathers for
// transposes and slices) run on the GPU, so bytes cross the bus in their stored (smaller) form.
//
// Every launcher is asynchronous on `stream` (a cudaStream_t passed as void*; nullptr is the
// legacy default stream) and returns once the kernel is queued; none synchronizes. Pointers are
// device pointers (or managed / mapped host memory the device can reach); source and
// destination must not overlap. Element pointers must be aligned to the element size
// (cudaMalloc's 256 bytes always are); block-quantized and packed sources are read byte by byte
// and need no alignment. Data is little-endian (big-endian views stay on the CPU path).
// Results are bit for bit those of the CPU path in src/transform (cast.cpp, ggml_dequant.cpp,
// quantize/*_dequantize.cpp), NaNs included; the element math is shared through
// src/cuda/kernels/*.cuh and tested on the CPU by tests/cuda_kernels_math_test.
//
// Errors: a (from, to) pair or type without a kernel throws Error(unsupported), and arguments
// a kernel cannot serve (sizes, ranks, bits) Error(invalid_argument), before anything is queued
// (ask the device_can_* functions first); a failed launch throws Error(io) naming the kernel and
// the CUDA error. Errors of a kernel while it runs surface, as CUDA's do, at the next
// synchronizing call on the stream. A count of zero queues nothing.
#pragma once

#include <cstdint>
#include <span>

#include "ballast/dtype.hpp"

namespace ballast::cuda {

// --- casts and scale -------------------------------------------------------------------------

// True when launch_cast handles from -> to, as can_cast (cast.hpp) does: `to` one of f64,
// f32, f16, bf16, f8_e4m3, f8_e5m2 and `from` one of those, an integer or bool type (i8..i64,
// u8..u64, boolean) or a GGUF block type of device_can_dequantize_ggml; or from == to (a
// copy). The rules are cast.hpp's: round to nearest-even, NaN kept, e4m3 saturates to +-448,
// e5m2 overflows to infinity.
bool device_can_cast(DType from, DType to);
// Converts `count` elements of `from` at src into `to` at dst (a GGUF block type goes through
// launch_ggml_dequantize).
void launch_cast(DType from, DType to, const void* src, void* dst, uint64_t count, void* stream);

// True when launch_scale handles dtype: f64, f32, f16, bf16, f8_e4m3, f8_e5m2.
bool device_can_scale(DType dtype);
// Multiplies `count` elements in place by factor as scale_elements does (the product is taken
// in double and rounded back into dtype).
void launch_scale(DType dtype, void* data, uint64_t count, double factor, void* stream);

// --- transposes and slices -------------------------------------------------------------------

inline constexpr int kMaxStridedRank = 8;

// Gathers the elements of a strided view in row-major order into contiguous dst: element
// (i0, i1, ...) is read from src + sum(i_k * strides[k]) * element_size, strides in elements
// and possibly negative or zero (src points at element (0, ..., 0), i.e. View::data + offset).
// shape and strides have the same rank, 1..kMaxStridedRank (rank 0 is one element: pass {1}).
// element_size is 1, 2, 4, 8 or 16 bytes, and src and dst are aligned to it.
// Throws Error(invalid_argument) for another rank or element size.
void launch_strided_copy(const void* src, void* dst, uint32_t element_size,
                         std::span<const int64_t> shape, std::span<const int64_t> strides,
                         void* stream);

// As launch_strided_copy, but element (i0, i1, ...) is written to
// dst + sum(i_k * dst_strides[k]) * element_size: a block of a view written into its place in
// a larger tensor (a chunk of a transpose into the transposed tensor). dst_strides has the
// rank of shape; no two elements may be written to the same place (no zero dst stride over an
// extent above 1). Throws Error(invalid_argument) as launch_strided_copy does.
void launch_strided_scatter(const void* src, void* dst, uint32_t element_size,
                            std::span<const int64_t> shape, std::span<const int64_t> src_strides,
                            std::span<const int64_t> dst_strides, void* stream);

// --- GGUF block types ------------------------------------------------------------------------

// True when launch_ggml_dequantize handles block_type: the types ggml_dequant.hpp covers
// (q4_0 q4_1 q5_0 q5_1 q8_0, q2_k q3_k q4_k q5_k q6_k q8_k, tq1_0 tq2_0, iq4_nl iq4_xs, mxfp4).
bool device_can_dequantize_ggml(DType block_type);
// Dequantizes `count` elements (a whole number of blocks) from the packed blocks at `blocks`
// (count / block_elements * block_bytes bytes, as stored in the GGUF file) into `to` at dst:
// ggml's f32 values, then cast as launch_cast(f32, to) would. `to` is a float type of
// device_can_cast(f32, to). Throws Error(invalid_argument) when count is not a whole number
// of blocks.
void launch_ggml_dequantize(DType block_type, DType to, const void* blocks, void* dst,
                            uint64_t count, void* stream);

// --- GPTQ, AWQ and FP8 checkpoints, ballast's int8 and int4 bundles --------------------------
// Each writes the dense weight [out, in] (torch Linear layout, row-major) as `to`, one of f32,
// f16, bf16: the f32 value of the CPU kernel, rounded once into `to`. Part shapes and dtypes
// are the CPU path's (quantize/*_dequantize.cpp); the caller checks them with the CPU checks
// (require_part / require_shape) before launching. Float parts (scales) may be any dtype of
// device_can_cast(dtype, f32) that is a float type.

// GPTQ (layout in gptq_quantize.hpp): x[o, i] = (q - zero) * scale, zero = (stored + 1) & maxq.
struct GptqParts {
  const uint32_t* qweight = nullptr;  // [in * bits / 32, out] int32 words
  const uint32_t* qzeros = nullptr;   // [groups, out * bits / 32] int32 words
  const void* scales = nullptr;       // [groups, out] of scales_dtype
  DType scales_dtype = DType::f16;
  // [in] group of each input element (i32 or i64), or nullptr for i / (in / groups). The
  // caller checks every entry is in [0, groups) (the CPU check); an entry outside gives NaN.
  const void* g_idx = nullptr;
  DType g_idx_dtype = DType::i32;
  int64_t out = 0;
  int64_t in = 0;
  int64_t groups = 0;
  int bits = 4;  // 2, 3, 4 or 8
};
void launch_gptq_dequantize(const GptqParts& parts, DType to, void* dst, void* stream);

// AWQ GEMM layout, 4 bits (awq_quantize.hpp): nibbles interleaved in the order kAwqOrder.
struct AwqParts {
  const uint32_t* qweight = nullptr;  // [in, out / 8] int32 words
  const uint32_t* qzeros = nullptr;   // [groups, out / 8] int32 words
  const void* scales = nullptr;       // [groups, out] of scales_dtype
  DType scales_dtype = DType::f16;
  int64_t out = 0;  // a multiple of 8
  int64_t in = 0;
  int64_t groups = 0;  // divides in
};
void launch_awq_dequantize(const AwqParts& parts, DType to, void* dst, void* stream);

// FP8 (fp8_dequantize.cpp): x = q * scale with one scale per block of row_block x col_block
// elements of a [scale_rows, scale_cols] grid (a per-tensor scale: a 1 x 1 grid with blocks of
// the whole weight; a per-row scale: [out, 1] with row_block 1).
struct Fp8Parts {
  const uint8_t* qweight = nullptr;      // [out, in] codes
  DType qweight_dtype = DType::f8_e4m3;  // f8_e4m3 or f8_e5m2
  const void* scale = nullptr;           // [scale_rows, scale_cols] of scale_dtype
  DType scale_dtype = DType::f32;
  int64_t out = 0;
  int64_t in = 0;
  int64_t scale_rows = 1;
  int64_t scale_cols = 1;
  int64_t row_block = 1;  // fp8_block_extent(out, scale_rows)
  int64_t col_block = 1;  // fp8_block_extent(in, scale_cols)
};
void launch_fp8_dequantize(const Fp8Parts& parts, DType to, void* dst, void* stream);

// ballast's own int8 bundles (int8_quantize.hpp): x = (q - zero) * scale, one scale (and zero
// point) per output row; symmetric bundles (i8 codes) have no zero points.
struct Int8Parts {
  const void* qweight = nullptr;  // [out, in] codes: i8 (symmetric) or u8 (with qzeros)
  DType qweight_dtype = DType::i8;
  const void* scales = nullptr;  // [out] of scales_dtype
  DType scales_dtype = DType::f32;
  const uint8_t* qzeros = nullptr;  // [out] zero points (u8 codes), or nullptr when symmetric
  int64_t out = 0;
  int64_t in = 0;
};
void launch_int8_dequantize(const Int8Parts& parts, DType to, void* dst, void* stream);

// ballast's own int4 bundles (int4_quantize.hpp): two codes a byte (even input index in the
// low nibble), x = (q - zero) * scale per group of in / groups input elements.
struct Int4Parts {
  const uint8_t* qweight = nullptr;  // [out, in / 2]
  const void* scales = nullptr;      // [out, groups] of scales_dtype
  DType scales_dtype = DType::f32;
  const uint8_t* zeros = nullptr;  // [out, groups]
  int64_t out = 0;
  int64_t in = 0;  // even
  int64_t groups = 0;
};
void launch_int4_dequantize(const Int4Parts& parts, DType to, void* dst, void* stream);

// The block extent fp8_dequantize.cpp derives for `blocks` scales along a dimension of
// `extent` elements: the whole extent for one block, 128 when 128 tiles it (DeepSeek's
// 128 x 128), else extent / blocks when that divides.
inline int64_t fp8_block_extent(int64_t extent, int64_t blocks) {
  if (blocks == 1) return extent > 1 ? extent : 1;
  if ((extent + 127) / 128 == blocks) return 128;
  return extent % blocks == 0 ? extent / blocks : extent;
}

}  // namespace ballast::cuda
