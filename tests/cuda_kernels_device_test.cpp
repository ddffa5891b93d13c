// The device kernels (src/cuda/device_kernels.hpp) on a real GPU against the CPU path of
// src/transform, bit for bit, over the inputs of cuda_kernels_math_test
// (cuda_kernels_inputs.hpp). Without a CUDA device every GPU test skips ("no CUDA device");
// the argument checks that throw before anything reaches the GPU run everywhere. Small enough
// for compute-sanitizer --tool memcheck.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ballast/error.hpp"
#include "cuda/device_kernels.hpp"
#include "cuda_kernels_inputs.hpp"
#include "loader/strided_gather.hpp"
#include "transform/cast.hpp"
#include "transform/quantize/dequantize_kernels.hpp"

namespace ballast {
namespace {

using test::first_difference;
using test::kCastSources;
using test::kCastTargets;

void check(cudaError_t status, const char* what) {
  ASSERT_EQ(status, cudaSuccess) << what << ": " << cudaGetErrorString(status);
}

// Device memory holding a copy of host bytes (or zeros), freed at scope end.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t size) : size_(size) {
    check(cudaMalloc(&data_, size_ == 0 ? 1 : size_), "cudaMalloc");
    check(cudaMemset(data_, 0, size_ == 0 ? 1 : size_), "cudaMemset");
  }
  template <typename T>
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size() * sizeof(T)) {
    check(cudaMemcpy(data_, host.data(), size_, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(data_); }

  void* get() const { return data_; }
  template <typename T = std::byte>
  T* as() const {
    return static_cast<T*>(data_);
  }
  std::vector<std::byte> download() const {
    std::vector<std::byte> host(size_);
    check(cudaMemcpy(host.data(), data_, size_, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    return host;
  }

 private:
  void* data_ = nullptr;
  size_t size_;
};

class CudaKernelsDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      cudaGetLastError();  // clear the "no device" status
      GTEST_SKIP() << "no CUDA device";
    }
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  void* stream() const { return stream_; }
  void finish() { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

 private:
  cudaStream_t stream_ = nullptr;
};

TEST_F(CudaKernelsDevice, CastsMatchTheCpuPathForEveryPair) {
  for (DType from : kCastSources) {
    const auto src = test::cast_inputs(from);
    const size_t n = src.size() / cuda::storage_bytes(from);
    const DeviceBuffer device_src(src);
    std::vector<DType> targets = kCastTargets;
    if (!cuda::is_cast_target(from)) targets.push_back(from);  // a copy
    for (DType to : targets) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
      ASSERT_TRUE(cuda::device_can_cast(from, to));
      DeviceBuffer dst(n * cuda::storage_bytes(to));
      cuda::launch_cast(from, to, device_src.get(), dst.get(), n, stream());
      finish();
      std::vector<std::byte> expected(n * cuda::storage_bytes(to));
      cast_elements(from, src.data(), to, expected.data(), n);
      EXPECT_EQ(first_difference(dst.download(), expected, cuda::storage_bytes(to)), "");
    }
  }
}

TEST_F(CudaKernelsDevice, ScaleMatchesTheCpuPath) {
  for (DType d : kCastTargets) {
    const auto src = test::cast_inputs(d);
    const size_t n = src.size() / cuda::storage_bytes(d);
    for (double factor : test::kScaleFactors) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " * " + std::to_string(factor));
      const DeviceBuffer data(src);
      cuda::launch_scale(d, data.get(), n, factor, stream());
      finish();
      auto expected = src;
      scale_elements(d, expected.data(), n, factor);
      EXPECT_EQ(first_difference(data.download(), expected, cuda::storage_bytes(d),
                                 {d, std::isnan(factor)}),
                "");
    }
  }
}

// nan_matches_nan: blocks whose scales may be NaN (see test::Agreement).
void expect_ggml_matches(DType type, const std::vector<uint8_t>& blocks, bool nan_matches_nan,
                         void* stream) {
  const DTypeInfo& info = dtype_info(type);
  const size_t n = blocks.size() / info.block_bytes * info.block_elements;
  const DeviceBuffer device_blocks(blocks);
  for (DType to : kCastTargets) {
    SCOPED_TRACE(std::string(dtype_name(type)) + " -> " + std::string(dtype_name(to)));
    std::vector<std::byte> expected(n * cuda::storage_bytes(to));
    cast_elements(type, reinterpret_cast<const std::byte*>(blocks.data()), to, expected.data(), n);
    DeviceBuffer dst(n * cuda::storage_bytes(to)), cast_dst(n * cuda::storage_bytes(to));
    cuda::launch_ggml_dequantize(type, to, device_blocks.get(), dst.get(), n, stream);
    ASSERT_TRUE(cuda::device_can_cast(type, to));
    cuda::launch_cast(type, to, device_blocks.get(), cast_dst.get(), n, stream);
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
    const test::Agreement agreement{to, nan_matches_nan};
    EXPECT_EQ(first_difference(dst.download(), expected, cuda::storage_bytes(to), agreement), "");
    EXPECT_EQ(first_difference(cast_dst.download(), expected, cuda::storage_bytes(to), agreement),
              "");
  }
}

TEST_F(CudaKernelsDevice, GgmlRandomBlocksMatchTheCpuPath) {
  for (DType type : test::kGgmlTypes) {
    ASSERT_TRUE(cuda::device_can_dequantize_ggml(type));
    for (bool finite_scales : {true, false}) {
      SCOPED_TRACE(finite_scales ? "finite scales" : "random scales");
      expect_ggml_matches(type, test::random_ggml_blocks(type, 64, finite_scales, 7),
                          !finite_scales, stream());
    }
  }
}

TEST_F(CudaKernelsDevice, GgmlGoldenBlocksMatchTheCpuPath) {
  BALLAST_REQUIRE_GOLDEN();
  const auto stored = test::golden_ggml_blocks();
  EXPECT_EQ(stored.size(), 7u);
  for (const auto& tensor : stored) {
    SCOPED_TRACE(tensor.name);
    expect_ggml_matches(tensor.type, tensor.bytes, false, stream());
  }
}

// The CPU's dense f32 values cast into each dense dtype, against the kernel's output.
template <typename Parts, typename Launch>
void expect_dense_matches(const Parts& parts, const std::vector<float>& cpu, Launch launch,
                          void* stream) {
  for (DType to : {DType::f32, DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(to));
    const size_t n = cpu.size();
    DeviceBuffer dst(n * cuda::storage_bytes(to));
    launch(parts, to, dst.get(), stream);
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
    std::vector<std::byte> expected(n * cuda::storage_bytes(to));
    cast_elements(DType::f32, reinterpret_cast<const std::byte*>(cpu.data()), to, expected.data(),
                  n);
    EXPECT_EQ(first_difference(dst.download(), expected, cuda::storage_bytes(to)), "");
  }
}

std::vector<std::byte> bytes_of(const NamedParts& parts, const std::string& name) {
  const auto span = parts.at(name)->bytes();
  return {span.begin(), span.end()};
}

TEST_F(CudaKernelsDevice, GptqMatchesTheCpuPath) {
  for (const auto& config : test::gptq_configs()) {
    SCOPED_TRACE("bits " + std::to_string(config.bits) + (config.desc_act ? " desc_act" : ""));
    const auto parts = test::quantized_parts(config, 64, 256, 11);
    const DeviceBuffer qweight(bytes_of(parts, "qweight")), qzeros(bytes_of(parts, "qzeros"));
    const DeviceBuffer scales(bytes_of(parts, "scales"));
    const DeviceBuffer g_idx(config.desc_act ? bytes_of(parts, "g_idx") : std::vector<std::byte>{});
    const cuda::GptqParts gptq{
        .qweight = qweight.as<uint32_t>(),
        .qzeros = qzeros.as<uint32_t>(),
        .scales = scales.get(),
        .scales_dtype = parts.at("scales")->dtype(),
        .g_idx = config.desc_act ? g_idx.get() : nullptr,
        .g_idx_dtype = config.desc_act ? parts.at("g_idx")->dtype() : DType::i32,
        .out = 64,
        .in = 256,
        .groups = parts.at("scales")->shape()[0],
        .bits = config.bits};
    expect_dense_matches(gptq, dequantize_gptq(parts).values, cuda::launch_gptq_dequantize,
                         stream());
  }
}

TEST_F(CudaKernelsDevice, AwqMatchesTheCpuPath) {
  for (const auto& config : test::awq_configs()) {
    SCOPED_TRACE("group " + std::to_string(config.group_size));
    const auto parts = test::quantized_parts(config, 64, 256, 12);
    const DeviceBuffer qweight(bytes_of(parts, "qweight")), qzeros(bytes_of(parts, "qzeros"));
    const DeviceBuffer scales(bytes_of(parts, "scales"));
    const cuda::AwqParts awq{.qweight = qweight.as<uint32_t>(),
                             .qzeros = qzeros.as<uint32_t>(),
                             .scales = scales.get(),
                             .scales_dtype = parts.at("scales")->dtype(),
                             .out = 64,
                             .in = 256,
                             .groups = parts.at("scales")->shape()[0]};
    expect_dense_matches(awq, dequantize_awq(parts).values, cuda::launch_awq_dequantize, stream());
  }
}

TEST_F(CudaKernelsDevice, Int8AndInt4BundlesMatchTheCpuPath) {
  for (bool symmetric : {true, false}) {
    SCOPED_TRACE(symmetric ? "int8 symmetric" : "int8 asymmetric");
    const auto parts = test::quantized_parts(
        {.scheme = QuantizeConfig::Scheme::int8, .symmetric = symmetric}, 48, 96, 14);
    const DeviceBuffer qweight(bytes_of(parts, "qweight")), scales(bytes_of(parts, "scales"));
    const DeviceBuffer qzeros(symmetric ? std::vector<std::byte>{} : bytes_of(parts, "qzeros"));
    const cuda::Int8Parts int8{.qweight = qweight.get(),
                               .qweight_dtype = parts.at("qweight")->dtype(),
                               .scales = scales.get(),
                               .scales_dtype = parts.at("scales")->dtype(),
                               .qzeros = symmetric ? nullptr : qzeros.as<uint8_t>(),
                               .out = 48,
                               .in = 96};
    expect_dense_matches(int8, dequantize_int8(parts).values, cuda::launch_int8_dequantize,
                         stream());
  }
  for (int group : {32, 96}) {
    SCOPED_TRACE("int4 group " + std::to_string(group));
    const auto parts = test::quantized_parts(
        {.scheme = QuantizeConfig::Scheme::int4, .group_size = group}, 48, 96, 15);
    const DeviceBuffer qweight(bytes_of(parts, "qweight")), scales(bytes_of(parts, "scales"));
    const DeviceBuffer zeros(bytes_of(parts, "zeros"));
    const cuda::Int4Parts int4{.qweight = qweight.as<uint8_t>(),
                               .scales = scales.get(),
                               .scales_dtype = parts.at("scales")->dtype(),
                               .zeros = zeros.as<uint8_t>(),
                               .out = 48,
                               .in = 96,
                               .groups = 96 / group};
    expect_dense_matches(int4, dequantize_int4(parts).values, cuda::launch_int4_dequantize,
                         stream());
  }
}

TEST_F(CudaKernelsDevice, Fp8MatchesTheCpuPath) {
  for (const test::Fp8Grid& g : test::kFp8Grids)
    for (DType code : {DType::f8_e4m3, DType::f8_e5m2})
      for (DType scale : {DType::f32, DType::bf16}) {
        SCOPED_TRACE(std::to_string(g.rows) + " x " + std::to_string(g.cols) + " scales, " +
                     std::string(dtype_name(code)) + ", " + std::string(dtype_name(scale)));
        const auto c = test::fp8_case(code, g.out, g.in, g.rows, g.cols, scale, 13);
        const DeviceBuffer qweight(bytes_of(c.parts, "qweight"));
        const DeviceBuffer scales(bytes_of(c.parts, "scale"));
        const cuda::Fp8Parts fp8{.qweight = qweight.as<uint8_t>(),
                                 .qweight_dtype = code,
                                 .scale = scales.get(),
                                 .scale_dtype = scale,
                                 .out = g.out,
                                 .in = g.in,
                                 .scale_rows = g.rows,
                                 .scale_cols = g.cols,
                                 .row_block = cuda::fp8_block_extent(g.out, g.rows),
                                 .col_block = cuda::fp8_block_extent(g.in, g.cols)};
        expect_dense_matches(fp8, dequantize_fp8(c.parts).values, cuda::launch_fp8_dequantize,
                             stream());
      }
}

TEST_F(CudaKernelsDevice, StridedCopiesGatherWhatStridedGatherGathers) {
  struct Size {
    uint32_t bytes;
    DType dtype;  // a dtype of that element size, for StridedGather
  };
  for (Size size : {Size{1, DType::u8}, Size{2, DType::u16}, Size{4, DType::u32},
                    Size{8, DType::u64}, Size{16, DType::c128}}) {
    std::vector<uint8_t> source(test::kStridedSourceElements * size.bytes);
    for (size_t k = 0; k < source.size(); ++k) source[k] = static_cast<uint8_t>(k * 131 + 7);
    const DeviceBuffer device_source(source);
    for (const auto& c : test::strided_cases()) {
      SCOPED_TRACE(c.name + ", " + std::to_string(size.bytes) + "-byte elements");
      View view;
      view.offset = static_cast<uint64_t>(c.offset) * size.bytes;
      view.dtype = size.dtype;
      view.shape = c.shape;
      view.strides = c.strides;
      const uint64_t n = view.numel();
      std::vector<std::byte> expected(n * size.bytes);
      StridedGather(view, reinterpret_cast<const std::byte*>(source.data()))
          .gather(0, n, expected.data());
      DeviceBuffer dst(n * size.bytes);
      cuda::launch_strided_copy(device_source.as<uint8_t>() + view.offset, dst.get(), size.bytes,
                                c.shape, c.strides, stream());
      finish();
      EXPECT_EQ(first_difference(dst.download(), expected, size.bytes), "");
    }
  }
}

TEST_F(CudaKernelsDevice, StridedScattersPlaceWhatStridedGatherGathers) {
  for (uint32_t bytes : {1u, 2u, 4u, 8u, 16u}) {
    std::vector<uint8_t> source(test::kStridedSourceElements * bytes);
    for (size_t k = 0; k < source.size(); ++k) source[k] = static_cast<uint8_t>(k * 131 + 7);
    const DeviceBuffer device_source(source);
    for (const auto& c : test::strided_cases()) {
      SCOPED_TRACE(c.name + ", " + std::to_string(bytes) + "-byte elements");
      const auto padded = test::padded_strides(c.shape);
      std::vector<std::byte> expected(test::padded_elements(c.shape) * bytes);
      uint64_t n = 1;
      for (int64_t extent : c.shape) n *= static_cast<uint64_t>(extent);
      for (uint64_t k = 0; k < n; ++k) {
        const auto from = static_cast<int64_t>(c.offset) + [&] {
          int64_t at = 0;
          uint64_t rest = k;
          for (size_t d = c.shape.size(); d-- > 0;) {
            at += static_cast<int64_t>(rest % static_cast<uint64_t>(c.shape[d])) * c.strides[d];
            rest /= static_cast<uint64_t>(c.shape[d]);
          }
          return at;
        }();
        std::memcpy(expected.data() + test::padded_offset(c.shape, padded, k) * bytes,
                    source.data() + from * bytes, bytes);
      }
      DeviceBuffer dst(expected.size());  // zeros where nothing lands, as in `expected`
      cuda::launch_strided_scatter(device_source.as<uint8_t>() + c.offset * bytes, dst.get(), bytes,
                                   c.shape, c.strides, padded, stream());
      finish();
      EXPECT_EQ(first_difference(dst.download(), expected, bytes), "");
    }
  }
}

TEST_F(CudaKernelsDevice, NegativeStridesReadBackwards) {
  const auto& c = test::kReversed;
  std::vector<uint32_t> source(test::kStridedSourceElements);
  for (size_t k = 0; k < source.size(); ++k) source[k] = static_cast<uint32_t>(k);
  const DeviceBuffer device_source(source);
  DeviceBuffer dst(source.size() * 4);
  cuda::launch_strided_copy(device_source.as<uint32_t>() + c.offset, dst.get(), 4, c.shape,
                            c.strides, stream());
  finish();
  const auto bytes = dst.download();
  std::vector<uint32_t> gathered(source.size());
  std::memcpy(gathered.data(), bytes.data(), bytes.size());
  EXPECT_TRUE(std::equal(gathered.begin(), gathered.end(), source.rbegin()));
}

// Requests the kernels cannot serve are refused before anything reaches a GPU.
TEST(CudaKernelsArguments, UnsupportedRequestsThrowBeforeLaunching) {
  auto code_of = [](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::io;  // not thrown: reported as a code no check expects
  };
  EXPECT_FALSE(cuda::device_can_cast(DType::f32, DType::i32));
  EXPECT_FALSE(cuda::device_can_cast(DType::iq2_xxs, DType::f32));
  EXPECT_FALSE(cuda::device_can_cast(DType::q4_0, DType::i8));
  EXPECT_EQ(
      code_of([] { cuda::launch_cast(DType::f32, DType::i32, nullptr, nullptr, 4, nullptr); }),
      ErrorCode::unsupported);
  EXPECT_EQ(code_of([] { cuda::launch_cast(DType::i4, DType::i4, nullptr, nullptr, 3, nullptr); }),
            ErrorCode::invalid_argument);
  EXPECT_FALSE(cuda::device_can_scale(DType::i8));
  EXPECT_EQ(code_of([] { cuda::launch_scale(DType::i8, nullptr, 4, 2.0, nullptr); }),
            ErrorCode::unsupported);
  EXPECT_FALSE(cuda::device_can_dequantize_ggml(DType::iq2_xxs));
  EXPECT_EQ(code_of([] {
              cuda::launch_ggml_dequantize(DType::iq2_xxs, DType::f32, nullptr, nullptr, 256,
                                           nullptr);
            }),
            ErrorCode::unsupported);
  EXPECT_EQ(code_of([] {
              cuda::launch_ggml_dequantize(DType::q4_0, DType::f32, nullptr, nullptr, 33, nullptr);
            }),
            ErrorCode::invalid_argument);
  const std::vector<int64_t> nine(9, 1);
  EXPECT_EQ(code_of([&] { cuda::launch_strided_copy(nullptr, nullptr, 4, nine, nine, nullptr); }),
            ErrorCode::invalid_argument);
  const std::vector<int64_t> one = {1};
  EXPECT_EQ(code_of([&] { cuda::launch_strided_copy(nullptr, nullptr, 3, one, one, nullptr); }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] {
              cuda::launch_strided_scatter(nullptr, nullptr, 4, nine, nine, nine, nullptr);
            }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(
      code_of([&] { cuda::launch_strided_scatter(nullptr, nullptr, 4, one, one, nine, nullptr); }),
      ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([] {
              cuda::launch_gptq_dequantize({.out = 64, .in = 256, .groups = 8, .bits = 5},
                                           DType::f16, nullptr, nullptr);
            }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([] {
              cuda::launch_awq_dequantize({.out = 64, .in = 256, .groups = 8}, DType::f8_e4m3,
                                          nullptr, nullptr);
            }),
            ErrorCode::unsupported);
  EXPECT_EQ(code_of([] {
              cuda::launch_int8_dequantize({.qweight_dtype = DType::u8, .out = 4, .in = 4},
                                           DType::f32, nullptr, nullptr);
            }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([] {
              cuda::launch_int4_dequantize({.out = 4, .in = 5, .groups = 1}, DType::f32, nullptr,
                                           nullptr);
            }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([] {
              cuda::launch_fp8_dequantize(
                  {.out = 256, .in = 256, .scale_rows = 1, .scale_cols = 1, .row_block = 128},
                  DType::f32, nullptr, nullptr);
            }),
            ErrorCode::invalid_argument);
}

}  // namespace
}  // namespace ballast
