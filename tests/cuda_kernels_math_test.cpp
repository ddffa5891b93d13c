// The device kernels' element math (src/cuda/kernels/*.cuh), compiled here for the CPU, against
// the CPU path of src/transform bit for bit: every cast pair over every f16 / bf16 / fp8 bit
// pattern and edge, midpoint and random wide values; the scale step; every GGUF block type
// over random and real (gguf-py written) blocks; GPTQ / AWQ / int8 / int4 bundles from
// ballast's quantizers and FP8 with block scales; strided views against StridedGather. Runs without
// CUDA.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cuda/kernels/checkpoint_math.cuh"
#include "cuda/kernels/element_math.cuh"
#include "cuda/kernels/ggml_blocks.cuh"
#include "cuda/kernels/strided_layout.cuh"
#include "cuda_kernels_inputs.hpp"
#include "loader/strided_gather.hpp"
#include "transform/cast.hpp"
#include "transform/ggml_dequant.hpp"
#include "transform/quantize/dequantize_kernels.hpp"

namespace ballast {
namespace {

using test::first_difference;
using test::kCastSources;
using test::kCastTargets;

// The element math's cast of n elements (the loop a device kernel runs).
std::vector<std::byte> math_cast(DType from, DType to, const std::vector<std::byte>& src) {
  const size_t n = src.size() / cuda::storage_bytes(from);
  std::vector<std::byte> dst(n * cuda::storage_bytes(to));
  cuda::with_cast_source(from, [&](auto tag) {
    for (size_t i = 0; i < n; ++i)
      cuda::cast_element_to<decltype(tag)::value>(to, src.data(), dst.data(), i);
  });
  return dst;
}

TEST(CudaKernelsMath, CastsMatchTheCpuPathForEveryPair) {
  int pairs = 0;
  for (DType from : kCastSources) {
    const auto src = test::cast_inputs(from);
    const size_t n = src.size() / cuda::storage_bytes(from);
    for (DType to : kCastTargets) {
      if (from == to) continue;
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
      ASSERT_TRUE(can_cast(from, to));
      std::vector<std::byte> expected(n * cuda::storage_bytes(to));
      cast_elements(from, src.data(), to, expected.data(), n);
      EXPECT_EQ(first_difference(math_cast(from, to, src), expected, cuda::storage_bytes(to)), "");
      ++pairs;
    }
  }
  EXPECT_EQ(pairs, 15 * 6 - 6);
}

TEST(CudaKernelsMath, LoadAndStoreF32AreTheCpuCasts) {
  for (DType d : kCastTargets) {
    SCOPED_TRACE(dtype_name(d));
    const auto src = test::cast_inputs(d);
    const size_t n = src.size() / cuda::storage_bytes(d);
    std::vector<float> loaded(n), expected(n);
    for (size_t i = 0; i < n; ++i) loaded[i] = cuda::load_f32(d, src.data(), i);
    cast_elements(d, src.data(), DType::f32, reinterpret_cast<std::byte*>(expected.data()), n);
    EXPECT_EQ(std::memcmp(loaded.data(), expected.data(), n * 4), 0);

    const auto floats = test::cast_inputs(DType::f32);
    const size_t m = floats.size() / 4;
    std::vector<std::byte> stored(m * cuda::storage_bytes(d)), cpu(stored.size());
    for (size_t i = 0; i < m; ++i) {
      float v;
      std::memcpy(&v, floats.data() + i * 4, 4);
      cuda::store_f32(d, stored.data(), i, v);
    }
    cast_elements(DType::f32, floats.data(), d, cpu.data(), m);
    EXPECT_EQ(first_difference(stored, cpu, cuda::storage_bytes(d)), "");
  }
}

TEST(CudaKernelsMath, ScaleMatchesTheCpuPath) {
  for (DType d : kCastTargets) {
    ASSERT_TRUE(can_scale(d));
    const auto src = test::cast_inputs(d);
    const size_t n = src.size() / cuda::storage_bytes(d);
    for (double factor : test::kScaleFactors) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " * " + std::to_string(factor));
      auto math = src, cpu = src;
      cuda::with_cast_source(d, [&](auto tag) {
        if constexpr (cuda::is_scale_dtype(decltype(tag)::value))
          for (size_t i = 0; i < n; ++i)
            cuda::scale_element<decltype(tag)::value>(math.data(), i, factor);
      });
      scale_elements(d, cpu.data(), n, factor);
      EXPECT_EQ(first_difference(math, cpu, cuda::storage_bytes(d), {d, std::isnan(factor)}), "");
    }
  }
}

// Every element of `blocks` through ggml_element, as `to`.
std::vector<std::byte> math_dequantize(DType type, DType to, const std::vector<uint8_t>& blocks) {
  const DTypeInfo& info = dtype_info(type);
  const size_t n = blocks.size() / info.block_bytes * info.block_elements;
  std::vector<std::byte> out(n * cuda::storage_bytes(to));
  cuda::with_ggml_type(type, [&](auto tag) {
    for (size_t i = 0; i < n; ++i)
      cuda::ggml_dequantize_element<decltype(tag)::value>(to, blocks.data(), out.data(), i);
  });
  return out;
}

std::vector<std::byte> cpu_dequantize(DType type, DType to, const std::vector<uint8_t>& blocks) {
  const DTypeInfo& info = dtype_info(type);
  const size_t n = blocks.size() / info.block_bytes * info.block_elements;
  std::vector<std::byte> out(n * cuda::storage_bytes(to));
  cast_elements(type, reinterpret_cast<const std::byte*>(blocks.data()), to, out.data(), n);
  return out;
}

TEST(CudaKernelsMath, GgmlBlockSizesAreTheDtypeTable) {
  for (DType type : test::kGgmlTypes) {
    SCOPED_TRACE(dtype_name(type));
    EXPECT_TRUE(ggml_can_dequantize(type));
    EXPECT_TRUE(cuda::with_ggml_type(type, [&](auto tag) {
      using Block = cuda::GgmlBlock<decltype(tag)::value>;
      EXPECT_EQ(Block::elements, dtype_info(type).block_elements);
      EXPECT_EQ(Block::bytes, dtype_info(type).block_bytes);
    }));
  }
  for (DType type : all_dtypes())  // the same coverage as the CPU path
    EXPECT_EQ(cuda::with_ggml_type(type, [](auto) {}), ggml_can_dequantize(type))
        << dtype_name(type);
}

TEST(CudaKernelsMath, GgmlRandomBlocksMatchTheCpuPath) {
  for (DType type : test::kGgmlTypes)
    for (bool finite_scales : {true, false}) {
      const auto blocks = test::random_ggml_blocks(type, 64, finite_scales, 7);
      for (DType to : kCastTargets) {
        SCOPED_TRACE(std::string(dtype_name(type)) + " -> " + std::string(dtype_name(to)) +
                     (finite_scales ? "" : ", random scales"));
        EXPECT_EQ(
            first_difference(math_dequantize(type, to, blocks), cpu_dequantize(type, to, blocks),
                             cuda::storage_bytes(to), {to, !finite_scales}),
            "");
      }
    }
}

TEST(CudaKernelsMath, GgmlGoldenBlocksMatchTheCpuPath) {
  BALLAST_REQUIRE_GOLDEN();
  const auto stored = test::golden_ggml_blocks();
  EXPECT_EQ(stored.size(), 7u);  // q8_0 q4_0 q4_1 q5_0 q5_1 tq1_0 tq2_0 in all_types.gguf
  for (const auto& tensor : stored) {
    SCOPED_TRACE(tensor.name);
    EXPECT_EQ(first_difference(math_dequantize(tensor.type, DType::f32, tensor.bytes),
                               cpu_dequantize(tensor.type, DType::f32, tensor.bytes), 4),
              "");
  }
}

// What a dequantization kernel writes for `parts`, against the CPU's dense f32 values cast
// into each dense dtype.
template <typename Parts, float (*Element)(const Parts&, int64_t, int64_t)>
void expect_dense_matches(const Parts& parts, const std::vector<float>& cpu) {
  for (DType to : {DType::f32, DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(to));
    std::vector<std::byte> math(cpu.size() * cuda::storage_bytes(to)), expected(math.size());
    for (uint64_t k = 0; k < cpu.size(); ++k)
      cuda::dequantize_dense_element<Parts, Element>(parts, to, math.data(), k);
    cast_elements(DType::f32, reinterpret_cast<const std::byte*>(cpu.data()), to, expected.data(),
                  cpu.size());
    EXPECT_EQ(first_difference(math, expected, cuda::storage_bytes(to)), "");
  }
}

const void* data_of(const NamedParts& parts, const std::string& name) {
  return parts.at(name)->data();
}

TEST(CudaKernelsMath, GptqMatchesTheCpuPath) {
  for (const auto& config : test::gptq_configs()) {
    SCOPED_TRACE("bits " + std::to_string(config.bits) + (config.desc_act ? " desc_act" : ""));
    const auto parts = test::quantized_parts(config, 64, 256, 11);
    cuda::GptqParts gptq{.qweight = static_cast<const uint32_t*>(data_of(parts, "qweight")),
                         .qzeros = static_cast<const uint32_t*>(data_of(parts, "qzeros")),
                         .scales = data_of(parts, "scales"),
                         .scales_dtype = parts.at("scales")->dtype(),
                         .g_idx = config.desc_act ? data_of(parts, "g_idx") : nullptr,
                         .g_idx_dtype = config.desc_act ? parts.at("g_idx")->dtype() : DType::i32,
                         .out = 64,
                         .in = 256,
                         .groups = parts.at("scales")->shape()[0],
                         .bits = config.bits};
    expect_dense_matches<cuda::GptqParts, cuda::gptq_element>(gptq, dequantize_gptq(parts).values);
  }
}

TEST(CudaKernelsMath, AwqMatchesTheCpuPath) {
  for (const auto& config : test::awq_configs()) {
    SCOPED_TRACE("group " + std::to_string(config.group_size));
    const auto parts = test::quantized_parts(config, 64, 256, 12);
    cuda::AwqParts awq{.qweight = static_cast<const uint32_t*>(data_of(parts, "qweight")),
                       .qzeros = static_cast<const uint32_t*>(data_of(parts, "qzeros")),
                       .scales = data_of(parts, "scales"),
                       .scales_dtype = parts.at("scales")->dtype(),
                       .out = 64,
                       .in = 256,
                       .groups = parts.at("scales")->shape()[0]};
    expect_dense_matches<cuda::AwqParts, cuda::awq_element>(awq, dequantize_awq(parts).values);
  }
}

TEST(CudaKernelsMath, Int8AndInt4BundlesMatchTheCpuPath) {
  for (bool symmetric : {true, false}) {
    SCOPED_TRACE(symmetric ? "int8 symmetric" : "int8 asymmetric");
    const auto parts = test::quantized_parts(
        {.scheme = QuantizeConfig::Scheme::int8, .symmetric = symmetric}, 48, 96, 14);
    cuda::Int8Parts int8{
        .qweight = data_of(parts, "qweight"),
        .qweight_dtype = parts.at("qweight")->dtype(),
        .scales = data_of(parts, "scales"),
        .scales_dtype = parts.at("scales")->dtype(),
        .qzeros = symmetric ? nullptr : static_cast<const uint8_t*>(data_of(parts, "qzeros")),
        .out = 48,
        .in = 96};
    expect_dense_matches<cuda::Int8Parts, cuda::int8_element>(int8, dequantize_int8(parts).values);
  }
  for (int group : {32, 96}) {
    SCOPED_TRACE("int4 group " + std::to_string(group));
    const auto parts = test::quantized_parts(
        {.scheme = QuantizeConfig::Scheme::int4, .group_size = group}, 48, 96, 15);
    cuda::Int4Parts int4{.qweight = static_cast<const uint8_t*>(data_of(parts, "qweight")),
                         .scales = data_of(parts, "scales"),
                         .scales_dtype = parts.at("scales")->dtype(),
                         .zeros = static_cast<const uint8_t*>(data_of(parts, "zeros")),
                         .out = 48,
                         .in = 96,
                         .groups = 96 / group};
    expect_dense_matches<cuda::Int4Parts, cuda::int4_element>(int4, dequantize_int4(parts).values);
  }
}

TEST(CudaKernelsMath, Fp8MatchesTheCpuPath) {
  for (const test::Fp8Grid& g : test::kFp8Grids)
    for (DType code : {DType::f8_e4m3, DType::f8_e5m2})
      for (DType scale : {DType::f32, DType::bf16}) {
        SCOPED_TRACE(std::to_string(g.rows) + " x " + std::to_string(g.cols) + " scales, " +
                     std::string(dtype_name(code)) + ", " + std::string(dtype_name(scale)));
        const auto c = test::fp8_case(code, g.out, g.in, g.rows, g.cols, scale, 13);
        cuda::Fp8Parts fp8{.qweight = static_cast<const uint8_t*>(data_of(c.parts, "qweight")),
                           .qweight_dtype = code,
                           .scale = data_of(c.parts, "scale"),
                           .scale_dtype = scale,
                           .out = g.out,
                           .in = g.in,
                           .scale_rows = g.rows,
                           .scale_cols = g.cols,
                           .row_block = cuda::fp8_block_extent(g.out, g.rows),
                           .col_block = cuda::fp8_block_extent(g.in, g.cols)};
        expect_dense_matches<cuda::Fp8Parts, cuda::fp8_element>(fp8,
                                                                dequantize_fp8(c.parts).values);
      }
}

// The u32 elements the strided cases index, and a case's view of them.
std::vector<uint32_t> strided_source() {
  std::vector<uint32_t> source(test::kStridedSourceElements);
  for (size_t k = 0; k < source.size(); ++k) source[k] = static_cast<uint32_t>(k * 2654435761u);
  return source;
}

View u32_view_of(const test::StridedCase& c) {
  View view;
  view.offset = static_cast<uint64_t>(c.offset) * 4;
  view.dtype = DType::u32;
  view.shape = c.shape;
  view.strides = c.strides;
  return view;
}

// The view's elements in row-major order, as the CPU path gathers them.
std::vector<uint32_t> gather_of(const View& view, const std::byte* memory) {
  std::vector<uint32_t> out(view.numel());
  StridedGather(view, memory).gather(0, out.size(), reinterpret_cast<std::byte*>(out.data()));
  return out;
}

TEST(CudaKernelsMath, StridedOffsetsGatherWhatStridedGatherGathers) {
  const std::vector<uint32_t> source = strided_source();
  const auto* memory = reinterpret_cast<const std::byte*>(source.data());
  for (const auto& c : test::strided_cases()) {
    SCOPED_TRACE(c.name);
    const View view = u32_view_of(c);
    const std::vector<uint32_t> expected = gather_of(view, memory);
    const uint64_t n = expected.size();
    std::vector<uint32_t> gathered(n);
    const auto layout = cuda::simplify_layout(c.shape, c.strides);
    for (uint64_t k = 0; k < n; ++k)
      cuda::strided_copy_element(layout, source.data() + c.offset, gathered.data(), k);
    EXPECT_EQ(gathered, expected);
  }
}

TEST(CudaKernelsMath, StridedScattersPlaceWhatStridedGatherGathers) {
  const std::vector<uint32_t> source = strided_source();
  const auto* memory = reinterpret_cast<const std::byte*>(source.data());
  for (const auto& c : test::strided_cases()) {
    SCOPED_TRACE(c.name);
    const View view = u32_view_of(c);
    const std::vector<uint32_t> gathered = gather_of(view, memory);
    const uint64_t n = gathered.size();
    // The destination: a row-major tensor one element larger in every dimension.
    const auto padded = test::padded_strides(c.shape);
    std::vector<uint32_t> expected(test::padded_elements(c.shape), 0xFFFFFFFFu);
    std::vector<uint32_t> scattered = expected;
    for (uint64_t k = 0; k < n; ++k)
      expected[test::padded_offset(c.shape, padded, k)] = gathered[k];
    const auto layout = cuda::simplify_pair_layout(c.shape, c.strides, padded);
    for (uint64_t k = 0; k < n; ++k)
      cuda::strided_scatter_element(layout, source.data() + c.offset, scattered.data(), k);
    EXPECT_EQ(scattered, expected);
  }
}

TEST(CudaKernelsMath, NegativeStridesReadBackwards) {
  const auto& c = test::kReversed;
  std::vector<uint32_t> source(test::kStridedSourceElements), gathered(source.size());
  for (size_t k = 0; k < source.size(); ++k) source[k] = static_cast<uint32_t>(k);
  const auto layout = cuda::simplify_layout(c.shape, c.strides);
  EXPECT_EQ(layout.rank, 1);  // one dimension, stride -1
  for (uint64_t k = 0; k < gathered.size(); ++k)
    cuda::strided_copy_element(layout, source.data() + c.offset, gathered.data(), k);
  EXPECT_TRUE(std::equal(gathered.begin(), gathered.end(), source.rbegin()));
}

}  // namespace
}  // namespace ballast
