// The inputs both device-kernel suites run (cuda_kernels_math_test on the CPU build of the
// kernels' element math, cuda_kernels_device_test on a GPU): every bit pattern of the narrow
// types, edges, rounding midpoints and random patterns of the wide ones, GGUF blocks (random
// and the golden corpus's real ones), GPTQ / AWQ / FP8 parts from ballast's own quantizers,
// and strided views; the device load suites write their quantized checkpoints from the same
// parts. Deterministic: fixed seeds.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ballast/dtype.hpp"
#include "ballast/storage.hpp"
#include "ballast/tensor.hpp"
#include "cuda/kernels/element_math.cuh"
#include "support/test_support.hpp"
#include "transform/quantize/dequantize.hpp"
#include "transform/quantize/quantize.hpp"

namespace ballast::test {

// Every dtype launch_cast reads, and every one it writes.
inline const std::vector<DType> kCastSources = {
    DType::f64,     DType::f32, DType::f16, DType::bf16, DType::f8_e4m3,
    DType::f8_e5m2, DType::i64, DType::i32, DType::i16,  DType::i8,
    DType::u64,     DType::u32, DType::u16, DType::u8,   DType::boolean};
inline const std::vector<DType> kCastTargets = {DType::f64,  DType::f32,     DType::f16,
                                                DType::bf16, DType::f8_e4m3, DType::f8_e5m2};
inline const std::vector<DType> kGgmlTypes = {
    DType::q8_0,  DType::q4_0,   DType::q4_k,   DType::q6_k, DType::q5_k, DType::q2_k,
    DType::q3_k,  DType::q4_1,   DType::q5_0,   DType::q5_1, DType::q8_k, DType::tq1_0,
    DType::tq2_0, DType::iq4_nl, DType::iq4_xs, DType::mxfp4};

template <typename T>
void append(std::vector<std::byte>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

// f32 values that stress the narrowing casts: every midpoint between neighbouring values of
// f16, bf16, e4m3 and e5m2 (ties and their neighbours), specials, and random bit patterns.
inline std::vector<float> f32_inputs() {
  std::vector<float> v;
  auto midpoints = [&](auto to_f32, uint32_t codes) {
    for (uint32_t c = 0; c + 1 < codes; ++c) {
      const float a = to_f32(c), b = to_f32(c + 1);
      if (!std::isfinite(a) || !std::isfinite(b) || std::signbit(a) != std::signbit(b)) continue;
      const float mid = static_cast<float>((static_cast<double>(a) + b) / 2);
      for (float m : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)})
        for (float s : {m, -m}) v.push_back(s);
      v.push_back(a);
    }
  };
  midpoints([](uint32_t c) { return cuda::f16_to_f32(static_cast<uint16_t>(c)); }, 0x7C01);
  midpoints([](uint32_t c) { return cuda::bf16_to_f32(static_cast<uint16_t>(c)); }, 0x7F81);
  midpoints([](uint32_t c) { return cuda::minifloat_to_f32<cuda::E4M3>(uint8_t(c)); }, 0x7F);
  midpoints([](uint32_t c) { return cuda::minifloat_to_f32<cuda::E5M2>(uint8_t(c)); }, 0x7C);
  for (uint32_t bits :
       {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u,
        0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FBFFFFFu, 0xFFFFFFFFu, 0x7FD23456u,
        0x43E00000u, 0x43E80000u, 0x47800000u, 0x477FF000u, 0x477FEFFFu})
    v.push_back(cuda::float_of(bits));
  for (double big : {9.2233720368547758e18, 1.8446744073709552e19, 2147483648.0, 65536.0,
                     -9.2233720368547758e18, 3e19, -3e19, 1e10, -1e10, 255.5, -128.5})
    v.push_back(static_cast<float>(big));
  std::mt19937 rng(28);
  for (int i = 0; i < 50000; ++i) v.push_back(cuda::float_of(static_cast<uint32_t>(rng())));
  return v;
}

// f64 values: the f32 inputs widened, midpoints between neighbouring f32 values, specials
// with payloads, and random bit patterns.
inline std::vector<double> f64_inputs() {
  std::vector<double> v;
  std::mt19937_64 rng(2028);
  const auto floats = f32_inputs();
  for (size_t i = 0; i < floats.size(); i += 4) {
    const double d = floats[i];
    v.push_back(d);
    if (std::isfinite(floats[i]))
      v.push_back((d + static_cast<double>(std::nextafter(floats[i], INFINITY))) / 2);
  }
  for (uint64_t bits : {0x7FF0000000000001ull, 0xFFF8000000000000ull, 0x7FF8000012345678ull,
                        0x7FF4000000000000ull, 0x0000000000000001ull, 0x47EFFFFFE0000000ull,
                        0x47EFFFFFF0000000ull, 0x36A0000000000000ull, 0xC3E0000000000000ull})
    v.push_back(cuda::double_of(bits));
  for (int i = 0; i < 20000; ++i) v.push_back(cuda::double_of(rng()));
  return v;
}

// Integer edges and random patterns of type I.
template <typename I>
std::vector<I> int_inputs() {
  using L = std::numeric_limits<I>;
  std::vector<I> v = {L::min(), L::max(), I(0), I(1), static_cast<I>(L::max() - 1)};
  for (int shift = 0; shift < 8 * static_cast<int>(sizeof(I)) - 1; ++shift)
    for (int delta : {-1, 0, 1}) {
      const auto p = static_cast<uint64_t>(1) << shift;
      v.push_back(static_cast<I>(p + static_cast<uint64_t>(delta)));
      v.push_back(static_cast<I>(0 - p - static_cast<uint64_t>(delta)));
    }
  std::mt19937_64 rng(1 + sizeof(I));
  for (int i = 0; i < 20000; ++i) v.push_back(static_cast<I>(rng()));
  return v;
}

// The raw bytes of the inputs for a cast from `dtype` (a kCastSources entry): every bit
// pattern for types of one or two bytes, the lists above for the wider ones.
inline std::vector<std::byte> cast_inputs(DType dtype) {
  std::vector<std::byte> out;
  const uint32_t size = cuda::storage_bytes(dtype);
  auto append_all = [&](const auto& values) {
    for (auto x : values) append(out, x);
  };
  if (dtype == DType::f64) append_all(f64_inputs());
  if (dtype == DType::f32) append_all(f32_inputs());
  if (dtype == DType::i64) append_all(int_inputs<int64_t>());
  if (dtype == DType::u64) append_all(int_inputs<uint64_t>());
  if (dtype == DType::i32) append_all(int_inputs<int32_t>());
  if (dtype == DType::u32) append_all(int_inputs<uint32_t>());
  if (size == 2)
    for (uint32_t b = 0; b < 0x10000; ++b) append(out, static_cast<uint16_t>(b));
  if (size == 1)
    for (uint32_t b = 0; b < 0x100; ++b) append(out, static_cast<uint8_t>(b));
  return out;
}

inline const std::vector<double> kScaleFactors = {0.5,    -1.75, 1.0 / 3,  1e30,
                                                  1e-310, -0.0,  INFINITY, -NAN};

// Byte offsets of the f16 scale fields of a block type (q8_k's f32 scale has its own rule).
inline std::vector<size_t> ggml_half_fields(DType type) {
  switch (type) {
    case DType::q4_1:
    case DType::q5_1:
    case DType::q4_k:
    case DType::q5_k: return {0, 2};
    case DType::q2_k: return {80, 82};
    case DType::q3_k: return {108};
    case DType::q6_k: return {208};
    case DType::tq1_0: return {52};
    case DType::tq2_0: return {64};
    case DType::mxfp4:
    case DType::q8_k: return {};
    default: return {0};  // q4_0 q5_0 q8_0 iq4_nl iq4_xs
  }
}

// `blocks` random blocks of `type`; with finite_scales every scale is a finite number (so no
// value is NaN), else scales are random bit patterns too (infinities and NaNs included).
inline std::vector<uint8_t> random_ggml_blocks(DType type, size_t blocks, bool finite_scales,
                                               uint32_t seed) {
  const DTypeInfo& info = dtype_info(type);
  std::mt19937 rng(seed + static_cast<uint32_t>(type));
  std::vector<uint8_t> out(blocks * info.block_bytes);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  if (!finite_scales) return out;
  for (size_t k = 0; k < blocks; ++k) {
    uint8_t* block = out.data() + k * info.block_bytes;
    for (size_t at : ggml_half_fields(type)) {
      uint16_t h;
      do h = static_cast<uint16_t>(rng());
      while ((h & 0x7C00) == 0x7C00);
      std::memcpy(block + at, &h, 2);
    }
    if (type == DType::q8_k) {
      float d;
      do d = cuda::float_of(static_cast<uint32_t>(rng()));
      while (!std::isfinite(d) || std::fabs(d) > 1e30f);
      std::memcpy(block, &d, 4);
    }
  }
  return out;
}

// The stored blocks of every block-type tensor in the golden corpus (gguf-py's writer):
// q8_0 q4_0 q4_1 q5_0 q5_1 tq1_0 tq2_0. Empty when the corpus is absent.
struct StoredBlocks {
  std::string name;
  DType type;
  std::vector<uint8_t> bytes;
};
inline std::vector<StoredBlocks> golden_ggml_blocks() {
  std::vector<StoredBlocks> found;
  if (!golden_dir()) return found;
  for (const auto& entry : golden_entries("gguf")) {
    if (entry["expect"] != "ok") continue;
    std::ifstream file(*golden_dir() / entry["path"].get<std::string>(), std::ios::binary);
    for (const auto& [name, t] : entry["tensors"].items()) {
      const auto type = parse_dtype(t["dtype"].get<std::string>());
      if (!type || dtype_info(*type).kind != DTypeKind::quantized) continue;
      StoredBlocks blocks{name, *type, std::vector<uint8_t>(t["nbytes"].get<size_t>())};
      file.seekg(t["data_offset"].get<std::streamoff>());
      file.read(reinterpret_cast<char*>(blocks.bytes.data()),
                static_cast<std::streamsize>(blocks.bytes.size()));
      if (file.good()) found.push_back(std::move(blocks));
    }
  }
  return found;
}

// A host tensor holding `bytes`.
inline TensorRef host_tensor(const std::string& name, DType dtype, Shape shape,
                             const std::vector<std::byte>& bytes) {
  auto storage = make_host_buffer(bytes.size(), 64);
  if (!bytes.empty()) std::memcpy(storage->data(), bytes.data(), bytes.size());
  return std::make_shared<Tensor>(name, dtype, std::move(shape), storage, 0, bytes.size());
}

// A random dense f32 weight [out, in] in [-2, 2).
inline TensorRef random_weight(int64_t out, int64_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<std::byte> bytes;
  for (int64_t k = 0; k < out * in; ++k) append(bytes, dist(rng));
  return host_tensor("w", DType::f32, {out, in}, bytes);
}

// A quantized bundle's parts, made by ballast's own quantizer from a random weight.
inline NamedParts quantized_parts(const QuantizeConfig& config, int64_t out, int64_t in,
                                  uint32_t seed) {
  const auto weight = random_weight(out, in, seed);
  auto factory = cpu_tensor_factory();
  return quantize_weight(*weight, config, "w", *factory, 64)->parts();
}

// The GPTQ and AWQ configurations the suites run.
inline std::vector<QuantizeConfig> gptq_configs() {
  std::vector<QuantizeConfig> configs;
  for (int bits : {2, 3, 4, 8})
    for (bool desc_act : {false, true})
      configs.push_back({.scheme = QuantizeConfig::Scheme::gptq,
                         .group_size = 32,
                         .bits = bits,
                         .desc_act = desc_act});
  return configs;
}
inline std::vector<QuantizeConfig> awq_configs() {
  return {{.scheme = QuantizeConfig::Scheme::awq, .group_size = 32, .zero_point = true},
          {.scheme = QuantizeConfig::Scheme::awq, .group_size = 64, .zero_point = false}};
}

// The FP8 scale grids both kernel suites check: per tensor, per row, DeepSeek's 128 x 128
// blocks (ragged edges), even blocks of 16 x 32.
struct Fp8Grid {
  int64_t out, in, rows, cols;
};
inline constexpr Fp8Grid kFp8Grids[] = {
    {48, 80, 1, 1}, {48, 80, 48, 1}, {200, 300, 2, 3}, {64, 128, 4, 4}};

// FP8 parts: random codes (NaN codes included) of [out, in] and a scale grid of
// [rows, cols] random positive scales in `scale_dtype` (f32 or bf16).
struct Fp8Case {
  NamedParts parts;
  int64_t rows;
  int64_t cols;
};
inline Fp8Case fp8_case(DType code_dtype, int64_t out, int64_t in, int64_t rows, int64_t cols,
                        DType scale_dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> codes, scales;
  for (int64_t k = 0; k < out * in; ++k) append(codes, static_cast<uint8_t>(rng()));
  std::uniform_real_distribution<float> dist(1e-4f, 4.0f);
  for (int64_t k = 0; k < rows * cols; ++k) {
    const float s = dist(rng);
    if (scale_dtype == DType::bf16)
      append(scales, cuda::f32_to_bf16(s));
    else
      append(scales, s);
  }
  Shape scale_shape = rows * cols == 1 ? Shape{} : Shape{rows, cols};
  return {{{"qweight", host_tensor("w.qweight", code_dtype, {out, in}, codes)},
           {"scale", host_tensor("w.scale", scale_dtype, scale_shape, scales)}},
          rows,
          cols};
}

// Strided views over a buffer of 4 * 6 * 5 * 7 elements: transposes, slices (offsets and
// steps), broadcasts, overlapping rows and a rank-8 view. (Negative strides, which the
// planner never makes and StridedGather does not take, have their own check.)
struct StridedCase {
  std::string name;
  int64_t offset;  // elements
  Shape shape;
  std::vector<int64_t> strides;
};
inline const int64_t kStridedSourceElements = 4 * 6 * 5 * 7;
inline std::vector<StridedCase> strided_cases() {
  return {
      {"contiguous", 0, {4, 6, 5, 7}, {210, 35, 7, 1}},
      {"transpose 2-D", 0, {35, 24}, {1, 35}},
      {"permute 3-D", 0, {5, 24, 7}, {7, 35, 1}},
      {"permute 4-D", 0, {7, 5, 6, 4}, {1, 7, 35, 210}},
      {"slice rows", 35, {2, 6, 5, 7}, {210, 35, 7, 1}},
      {"slice columns with step", 2, {4, 6, 5, 3}, {210, 35, 7, 2}},
      {"broadcast", 5, {3, 4, 7}, {0, 7, 1}},
      {"overlapping rows", 0, {6, 5}, {7, 7}},
      {"rank 8", 0, {2, 2, 3, 2, 5, 7, 1, 1}, {420, 105, 35, 210, 7, 1, 1, 1}},
      {"single element", 17, {1}, {1}},
  };
}

// A view of the whole buffer backwards: element k is source element 839 - k.
inline const StridedCase kReversed = {
    "reversed", kStridedSourceElements - 1, {4, 6, 35}, {-210, -35, -1}};

// The row-major strides of `shape` with every extent one larger: a scatter destination in which
// a strided case's elements land apart from each other and from untouched elements.
inline std::vector<int64_t> padded_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * (shape[d] + 1);
  return strides;
}
inline size_t padded_elements(const Shape& shape) {
  size_t n = 1;
  for (int64_t extent : shape) n *= static_cast<size_t>(extent + 1);
  return n;
}
// Where element k (row-major in shape) lands in the padded destination.
inline size_t padded_offset(const Shape& shape, const std::vector<int64_t>& strides, uint64_t k) {
  size_t offset = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    const auto extent = static_cast<uint64_t>(shape[d]);
    offset += static_cast<size_t>(k % extent) * static_cast<size_t>(strides[d]);
    k /= extent;
  }
  return offset;
}

// True when `bits` (one element of a float dtype) is a NaN.
inline bool is_nan_bits(DType dtype, const std::byte* bits) {
  uint64_t v = 0;
  std::memcpy(&v, bits, cuda::storage_bytes(dtype));
  switch (dtype) {
    case DType::f64: return (v & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
    case DType::f32: return (v & 0x7FFFFFFFu) > 0x7F800000u;
    case DType::f16: return (v & 0x7FFFu) > 0x7C00u;
    case DType::bf16: return (v & 0x7FFFu) > 0x7F80u;
    case DType::f8_e4m3: return (v & 0x7Fu) == 0x7Fu;
    case DType::f8_e5m2: return (v & 0x7Fu) > 0x7Cu;
    default: return false;
  }
}

// How two outputs of dtype `dtype` must agree: bit for bit, or (nan_matches_nan) bit for bit
// except that a NaN matches any NaN. The latter is for inputs where two NaNs meet (a NaN value
// times a NaN factor, two NaN scales of a block): which one x86 returns depends on the operand
// order the compiler picked for the CPU path, and GCC and clang pick differently.
struct Agreement {
  DType dtype;
  bool nan_matches_nan = false;
};

// The first element where `got` and `cpu` disagree, readable; "" when they agree.
inline std::string first_difference(const std::vector<std::byte>& got,
                                    const std::vector<std::byte>& cpu, size_t element_size,
                                    Agreement agreement = {DType::u8}) {
  if (got.size() != cpu.size()) return "sizes differ";
  for (size_t e = 0; e < got.size() / element_size; ++e) {
    const std::byte* a = got.data() + e * element_size;
    const std::byte* b = cpu.data() + e * element_size;
    if (std::memcmp(a, b, element_size) == 0) continue;
    if (agreement.nan_matches_nan && is_nan_bits(agreement.dtype, a) &&
        is_nan_bits(agreement.dtype, b))
      continue;
    std::string text = "element " + std::to_string(e) + ": kernel";
    for (size_t j = 0; j < element_size; ++j) text += " " + std::to_string(int(a[j]));
    text += ", CPU path";
    for (size_t j = 0; j < element_size; ++j) text += " " + std::to_string(int(b[j]));
    return text;
  }
  return "";
}

}  // namespace ballast::test
