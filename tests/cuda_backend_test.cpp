// The CUDA backend on a real GPU (skipped with "no CUDA device" elsewhere): pinned staging and
// async copies through the pipeline give the bytes of a CPU load for plain tensors, device
// casts, transposes and slices scattered on the device (with and without a cast) and
// host-side transforms; quantized checkpoints dequantize on the device as on the CPU; the
// device arena places tensors in the caller's cudaMalloc'd block; pinned memory stays within
// the staging budget; GPUDirect Storage (cuFile, skipped without libcufile) gives the same
// bytes. scripts/gpu_check.sh runs it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "ballast/ballast.hpp"
#include "ballast/cuda.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cufile_reader.hpp"
#include "cuda/device_tensor_factory.hpp"
#include "cuda_kernels_inputs.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

constexpr uint64_t kStaging = 8 << 20;

class CudaBackendTest : public testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    std::vector<StTensor> tensors;
    for (int i = 0; i < 24; ++i) {
      const size_t n = i == 0 ? (6 << 20) : 1 + static_cast<size_t>(i * 7919) % 100000;
      std::vector<float> v(n);
      for (size_t k = 0; k < n; ++k) v[k] = static_cast<float>((k * 37 + i) % 4093) * 0.25f;
      tensors.push_back({"t" + std::to_string(i), "F32", {static_cast<int64_t>(n)}, f32_bytes(v)});
    }
    for (const auto& t : tensors) names_.push_back(t.name);
    path_ = dir_ / "m.safetensors";
    write_file(path_, safetensors_file(tensors));
  }

  std::vector<TensorSpec> specs(Device device, std::vector<Transformation> steps = {}) const {
    std::vector<TensorSpec> out;
    for (const auto& n : names_)
      out.push_back({.name = n,
                     .device = device,
                     .source = WeightSource::file(path_),
                     .transformations = steps});
    return out;
  }

  void expect_same(const Tensor& device, const Tensor& host) const {
    ASSERT_EQ(device.device(), Device::cuda(0));
    ASSERT_EQ(device.nbytes(), host.nbytes()) << host.name();
    std::vector<std::byte> back(device.nbytes());
    cuda_backend(0)->copy_to_host(back.data(), device.data(), device.nbytes());
    EXPECT_TRUE(std::equal(back.begin(), back.end(), host.data())) << host.name();
  }

  TempDir dir_;
  std::filesystem::path path_;
  std::vector<std::string> names_;
};

TEST_F(CudaBackendTest, LoadsGiveTheBytesOfACpuLoad) {
  const std::vector<std::vector<Transformation>> transforms = {
      {}, {Cast{DType::bf16}}, {Cast{DType::f16}}, {Cast{DType::f8_e4m3}}, {Slice{0, 1, -1}}};
  for (ReadMode mode : {ReadMode::automatic, ReadMode::io_uring, ReadMode::direct})
    for (const auto& steps : transforms) {
      SCOPED_TRACE(std::string(read_mode_name(mode)));
      auto loader =
          make_weight_loader({.read_mode = mode, .num_threads = 4, .max_staging_bytes = kStaging});
      const auto want = make_weight_loader()->load_tensors(specs(Device::cpu(), steps));
      const auto got = loader->load_tensors(specs(Device::cuda(0), steps));
      for (size_t i = 0; i < got.size(); ++i) expect_same(*got[i], *want[i]);
    }
  EXPECT_LE(cuda_backend(0)->peak_pinned_bytes(), kStaging);
}

TEST_F(CudaBackendTest, StridedViewsScatterOnTheDeviceAsACpuLoadGathers) {
  std::vector<float> v(96 * 40 * 50);
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>((k * 37) % 4093) * 0.25f - 500;
  const auto path = dir_ / "strided.safetensors";
  write_file(path, safetensors_file({{"w", "F32", {1920, 100}, f32_bytes(v)},
                                     {"cube", "F32", {96, 40, 50}, f32_bytes(v)}}));
  const std::vector<std::pair<std::string, std::vector<Transformation>>> cases = {
      {"w", {Transpose{0, 1}}},
      {"w", {Transpose{0, 1}, Cast{DType::bf16}}},
      {"w", {Slice{1, 3, 97}, Cast{DType::f8_e4m3}}},
      {"cube", {Transpose{0, 2}, Cast{DType::f16}}},
      {"cube", {Slice{1, 5, 33}, Slice{2, 1, 49}}},
  };
  // A small ring: many chunks a tensor.
  auto loader = make_weight_loader(
      {.num_threads = 4, .read_chunk_bytes = 64 << 10, .max_staging_bytes = 256 << 10});
  for (const auto& [name, steps] : cases) {
    SCOPED_TRACE(name + " " + to_string(steps.front()));
    TensorSpec spec{.name = name,
                    .device = Device::cuda(0),
                    .source = WeightSource::file(path),
                    .transformations = steps};
    const auto got = loader->load_tensor(spec);
    spec.device = Device::cpu();
    expect_same(*got, *make_weight_loader()->load_tensor(spec));
  }
}

TEST_F(CudaBackendTest, QuantizedCheckpointsDequantizeOnTheDevice) {
  const auto parts = test::quantized_parts(test::gptq_configs()[3], 64, 256, 11);  // 3 bits, g_idx
  std::vector<StTensor> tensors;
  for (const auto& [name, t] : parts)
    tensors.push_back({"layer." + name, t->dtype() == DType::f16 ? "F16" : "I32", t->shape(),
                       std::string(reinterpret_cast<const char*>(t->data()), t->nbytes())});
  const auto path = dir_ / "gptq.safetensors";
  write_file(path, safetensors_file(tensors));
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    DequantizeSpec spec{.source = WeightSource::file(path),
                        .base = "layer",
                        .scheme = QuantizeConfig::Scheme::gptq,
                        .dtype = dtype,
                        .device = Device::cuda(0)};
    const auto got = load_dequantized(*make_weight_loader(), spec);
    spec.device = Device::cpu();
    expect_same(*got, *load_dequantized(*make_weight_loader(), spec));
  }
}

TEST_F(CudaBackendTest, TheArenaPlacesTensorsInTheCallersBlock) {
  auto backend = cuda_backend(0);
  const uint64_t size = 64 << 20;
  std::byte* block = backend->allocate_device(size);
  {
    auto loader = make_weight_loader(
        {.num_threads = 4, .factories = {make_cuda_arena_tensor_factory(block, size, 0)}});
    const auto want = make_weight_loader()->load_tensors(specs(Device::cpu()));
    const auto got = loader->load_tensors(specs(Device::cuda(0)));
    for (size_t i = 0; i < got.size(); ++i) {
      expect_same(*got[i], *want[i]);
      EXPECT_GE(got[i]->data(), block);
      EXPECT_LE(got[i]->data() + got[i]->nbytes(), block + size);
    }
  }
  backend->free_device(block);
}

TEST_F(CudaBackendTest, CapabilitiesListCuda) {
  const auto caps = make_weight_loader()->capabilities();
  EXPECT_NE(std::find(caps.devices.begin(), caps.devices.end(), Device::Kind::cuda),
            caps.devices.end());
}

TEST_F(CudaBackendTest, GpuDirectStorageGivesTheBytesOfACpuLoad) {
  std::string reason;
  if (!cufile_direct_storage(0, GpuDirectStorage::required, reason))
    GTEST_SKIP() << "no GPUDirect Storage: " << reason;
  const int fd = ::open(path_.c_str(), O_RDONLY | O_DIRECT);
  if (fd < 0) GTEST_SKIP() << "the file system of " << path_ << " refuses O_DIRECT";
  ::close(fd);
  for (const std::vector<Transformation>& steps :
       {std::vector<Transformation>{}, std::vector<Transformation>{Cast{DType::bf16}}}) {
    SCOPED_TRACE(steps.empty() ? "plain" : "bf16 cast");
    auto loader = make_weight_loader({.read_mode = ReadMode::direct,
                                      .num_threads = 4,
                                      .max_staging_bytes = kStaging,
                                      .gpu_direct_storage = GpuDirectStorage::required});
    const auto want = make_weight_loader()->load_tensors(specs(Device::cpu(), steps));
    const auto got = loader->load_tensors(specs(Device::cuda(0), steps));
    for (size_t i = 0; i < got.size(); ++i) expect_same(*got[i], *want[i]);
  }
}

TEST(CuFile, WithoutADeviceThereIsNoDirectPathAndTheReasonSaysWhy) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  std::string reason;
  EXPECT_EQ(cufile_direct_storage(0, GpuDirectStorage::required, reason), nullptr);
  EXPECT_FALSE(reason.empty());
  std::cout << "no direct path: " << reason << "\n";
}

}  // namespace
}  // namespace ballast::test
