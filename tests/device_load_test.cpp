// Loads to a device through the loader, on the host-memory device backend standing in for
// cuda:0: every read mode gives the bytes of a CPU load for many tensors (bigger than the
// staging ring, tiny, zero-size) and for transforms (a cast on the device, a cast and a scale
// through the host), within the staging budget; strided views (2-D and 3-D transposes, row,
// column and uneven slices, with a cast to f32 / f16 / bf16 / fp8 or none) are scattered on the
// device from their stored bytes, byte for byte as on the CPU, with no device memory beyond the
// tensors and the ring's scratch; GPTQ, AWQ, FP8 (block scales), int8 and int4 checkpoints are
// uploaded packed and dequantized on the device as on the CPU; streaming hands each tensor over
// complete; a cancelled stream ends cleanly; the device arena places tensors in the caller's
// block. Without a CUDA device, a cuda(n) load fails naming the device.
#include <gtest/gtest.h>

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <vector>

#include "ballast/ballast.hpp"
#include "ballast/cuda.hpp"
#include "cuda/device_tensor_factory.hpp"
#include "cuda/host_device_backend.hpp"
#include "cuda_kernels_inputs.hpp"
#include "io/os.hpp"
#include "loader/default_loader.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"
#include "transform/cast.hpp"

namespace ballast::test {
namespace {

constexpr uint64_t kStaging = 64 << 10;

std::vector<float> values(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i % 1000) * 0.5f;
  return v;
}

class DeviceLoadTest : public testing::Test {
 protected:
  void SetUp() override {
    std::vector<StTensor> tensors = {{"big", "F32", {96, 1024}, f32_bytes(values(96 * 1024, 1))},
                                     {"empty", "F32", {0, 4}, ""}};
    for (int i = 0; i < 30; ++i) {
      const size_t n = 1 + static_cast<size_t>(i * 797) % 3000;
      tensors.push_back({"t" + std::to_string(i),
                         "F32",
                         {static_cast<int64_t>(n)},
                         f32_bytes(values(n, static_cast<float>(i)))});
    }
    for (const auto& t : tensors) names_.push_back(t.name);
    path_ = dir_ / "model.safetensors";
    write_file(path_, safetensors_file(tensors));
  }

  WeightLoaderConfig config(ReadMode mode, std::shared_ptr<TensorFactory> factory) const {
    return {.read_mode = mode,
            .num_threads = 3,
            .read_chunk_bytes = 16 << 10,
            .max_staging_bytes = kStaging,
            .factories = {std::move(factory)}};
  }

  std::vector<TensorSpec> specs(Device device, std::vector<Transformation> steps = {}) const {
    std::vector<TensorSpec> out;
    for (const auto& name : names_)
      out.push_back({.name = name,
                     .device = device,
                     .source = WeightSource::file(path_),
                     .transformations = steps});
    return out;
  }

  // The device tensor's bytes, read back, equal the CPU load's.
  void expect_same(DeviceBackend& backend, const Tensor& device, const Tensor& host) const {
    ASSERT_EQ(device.device(), Device::cuda(0)) << host.name();
    EXPECT_EQ(device.storage()->kind(), StorageKind::device_buffer) << host.name();
    EXPECT_EQ(device.dtype(), host.dtype()) << host.name();
    EXPECT_EQ(device.shape(), host.shape()) << host.name();
    ASSERT_EQ(device.nbytes(), host.nbytes()) << host.name();
    std::vector<std::byte> back(device.nbytes());
    backend.copy_to_host(back.data(), device.data(), device.nbytes());
    EXPECT_TRUE(std::equal(back.begin(), back.end(), host.data())) << host.name();
  }

  TempDir dir_;
  std::filesystem::path path_;
  std::vector<std::string> names_;
};

TEST_F(DeviceLoadTest, EveryReadModeAndTransformGivesTheBytesOfACpuLoad) {
  const std::vector<std::vector<Transformation>> transforms = {
      {}, {Cast{DType::bf16}}, {Cast{DType::f16}, Scale{2.0}}, {Slice{0, 1, -1}}};
  for (ReadMode mode : {ReadMode::automatic, ReadMode::read, ReadMode::io_uring, ReadMode::direct})
    for (const auto& steps : transforms) {
      SCOPED_TRACE(std::string(read_mode_name(mode)) + " " +
                   (steps.empty() ? "plain" : to_string(steps.front())));
      auto backend = make_host_device_backend({.copy_delay = std::chrono::microseconds(50)});
      auto loader = make_weight_loader(config(mode, make_device_tensor_factory(backend)));
      const auto want = make_weight_loader()->load_tensors(specs(Device::cpu(), steps));
      const auto got = loader->load_tensors(specs(Device::cuda(0), steps));
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) expect_same(*backend, *got[i], *want[i]);
      EXPECT_LE(backend->peak_pinned_bytes(), kStaging);
    }
}

TEST_F(DeviceLoadTest, ATransposeAndCastLoadOnTheDeviceAndMatch) {
  auto backend = make_host_device_backend();
  auto loader = make_weight_loader(config(ReadMode::read, make_device_tensor_factory(backend)));
  const TensorSpec spec{.name = "big",
                        .device = Device::cuda(0),
                        .source = WeightSource::file(path_),
                        .transformations = {Transpose{0, 1}, Cast{DType::f16}}};
  TensorSpec on_cpu = spec;
  on_cpu.device = Device::cpu();
  expect_same(*backend, *loader->load_tensor(spec), *make_weight_loader()->load_tensor(on_cpu));
}

// f16 bytes of `values`.
std::string f16_bytes(const std::vector<float>& values) {
  std::string out(values.size() * 2, '\0');
  cast_elements(DType::f32, reinterpret_cast<const std::byte*>(values.data()), DType::f16,
                reinterpret_cast<std::byte*>(out.data()), values.size());
  return out;
}

// Strided views on the device: the stored spans cross the bus, are cast and scattered there.
class DeviceStridedLoadTest : public testing::Test {
 protected:
  void SetUp() override {
    write_file(path_,
               safetensors_file({{"w", "F32", {96, 160}, f32_bytes(values(96 * 160, 1))},
                                 {"h", "F16", {96, 160}, f16_bytes(values(96 * 160, -7))},
                                 {"cube", "F32", {6, 40, 50}, f32_bytes(values(12000, 3))},
                                 {"hcube", "F16", {6, 40, 50}, f16_bytes(values(12000, 2))}}));
  }

  // Loads `name` with `steps` to the host device backend and to the CPU: the same bytes, the
  // device memory at most the tensor plus the ring's scratch (within the staging budget), and
  // at most the tensor's stored bytes copied to the device. Returns the bytes copied.
  uint64_t expect_device_load_matches(const std::string& name, std::vector<Transformation> steps,
                                      ReadMode mode = ReadMode::read) {
    auto backend = make_host_device_backend({.copy_delay = std::chrono::microseconds(20)});
    auto loader = make_weight_loader({.read_mode = mode,
                                      .num_threads = 2,
                                      .read_chunk_bytes = 16 << 10,
                                      .max_staging_bytes = kStaging,
                                      .factories = {make_device_tensor_factory(backend)}});
    TensorSpec spec{.name = name,
                    .device = Device::cuda(0),
                    .source = WeightSource::file(path_),
                    .transformations = std::move(steps)};
    const auto got = loader->load_tensor(spec);
    spec.device = Device::cpu();
    const auto want = make_weight_loader()->load_tensor(spec);
    EXPECT_EQ(got->dtype(), want->dtype());
    EXPECT_EQ(got->shape(), want->shape());
    EXPECT_EQ(got->nbytes(), want->nbytes());
    std::vector<std::byte> back(got->nbytes());
    backend->copy_to_host(back.data(), got->data(), got->nbytes());
    EXPECT_TRUE(std::equal(back.begin(), back.end(), want->data()));
    const auto counters = host_device_counters(*backend);
    EXPECT_LE(counters.peak_device_bytes, got->nbytes() + kStaging);
    const TensorInfo stored = loader->get_metadata(WeightSource::file(path_)).tensors.at(name);
    EXPECT_LE(counters.bytes_to_device, stored.nbytes);
    return counters.bytes_to_device;
  }

  TempDir dir_;
  std::filesystem::path path_ = dir_ / "strided.safetensors";
};

TEST_F(DeviceStridedLoadTest, TransposesAndSlicesMatchTheCpuLoad) {
  const std::vector<std::vector<Transformation>> cases = {
      {Transpose{0, 1}},
      {Slice{1, 16, 48}},                     // columns
      {Slice{1, 3, 157}},                     // uneven columns
      {Slice{1, 150, 160}, Slice{0, 5, 91}},  // a narrow block
      {Transpose{0, 1}, Slice{0, 7, 133}},
  };
  for (const auto& steps : cases) {
    SCOPED_TRACE(to_string(steps.front()) + (steps.size() > 1 ? " + " + to_string(steps[1]) : ""));
    expect_device_load_matches("w", steps);
  }
  const std::vector<std::vector<Transformation>> cube = {
      {Transpose{0, 2}}, {Transpose{1, 2}},
      {Transpose{0, 1}}, {Slice{1, 5, 33}},  // rows of 3-D
      {Slice{2, 1, 49}}, {Transpose{0, 2}, Slice{1, 2, 39}, Slice{2, 1, 5}},
  };
  for (const auto& steps : cube) {
    SCOPED_TRACE("cube " + to_string(steps.front()));
    expect_device_load_matches("cube", steps);
  }
}

TEST_F(DeviceStridedLoadTest, ACastAfterAStridedViewRunsOnTheDevice) {
  for (DType to : {DType::f16, DType::bf16, DType::f8_e4m3, DType::f8_e5m2}) {
    SCOPED_TRACE(dtype_name(to));
    expect_device_load_matches("w", {Transpose{0, 1}, Cast{to}});
    expect_device_load_matches("w", {Slice{1, 3, 101}, Cast{to}});
    expect_device_load_matches("cube", {Transpose{0, 2}, Slice{0, 1, 47}, Cast{to}});
  }
}

TEST_F(DeviceStridedLoadTest, EveryReadModeScattersTheSameBytes) {
  for (ReadMode mode : {ReadMode::automatic, ReadMode::io_uring, ReadMode::direct}) {
    SCOPED_TRACE(read_mode_name(mode));
    expect_device_load_matches("h", {Transpose{0, 1}, Cast{DType::f32}}, mode);
    expect_device_load_matches("cube", {Slice{2, 3, 41}, Cast{DType::bf16}}, mode);
  }
}

TEST_F(DeviceStridedLoadTest, TheStoredBytesCrossTheBusNotTheConverted) {
  // f16 stored, f32 loaded: only f16 bytes are copied to the device; a transpose's whole
  // stored spans, a column slice's runs only.
  const uint64_t stored = 96 * 160 * 2;
  EXPECT_EQ(expect_device_load_matches("h", {Transpose{0, 1}, Cast{DType::f32}}), stored);
  EXPECT_EQ(expect_device_load_matches("h", {Slice{0, 10, 50}, Slice{1, 8, 40}, Cast{DType::f32}}),
            uint64_t{40} * 32 * 2);
  EXPECT_EQ(expect_device_load_matches("hcube", {Slice{2, 1, 49}, Cast{DType::bf16}}),
            uint64_t{6} * 40 * 48 * 2);
  EXPECT_EQ(expect_device_load_matches("hcube", {Transpose{0, 2}, Cast{DType::f32}}),
            uint64_t{12000} * 2);
  EXPECT_EQ(expect_device_load_matches("hcube", {Transpose{1, 2}}), uint64_t{12000} * 2);
}

// Quantized checkpoints dequantized on the device: the parts cross the bus packed.
class DeviceLoadDequantizedTest : public testing::Test {
 protected:
  static const char* st_dtype(DType dtype) {
    switch (dtype) {
      case DType::i32: return "I32";
      case DType::u32: return "U32";
      case DType::i64: return "I64";
      case DType::i8: return "I8";
      case DType::u8: return "U8";
      case DType::f16: return "F16";
      case DType::bf16: return "BF16";
      case DType::f8_e4m3: return "F8_E4M3";
      case DType::f8_e5m2: return "F8_E5M2";
      default: return "F32";
    }
  }

  // Writes `parts` as "layer.<stored name>" tensors and loads them dequantized to the host
  // device backend and to the CPU, in each dense dtype: the same bytes; no more copied to the
  // device than the parts hold, nor more device memory than the parts and the dense tensor.
  void expect_device_matches(QuantizeConfig::Scheme scheme, const NamedParts& parts,
                             const std::string& tag) {
    std::vector<StTensor> tensors;
    uint64_t part_bytes = 0;
    for (const auto& [name, t] : parts) {
      const bool fp8 = scheme == QuantizeConfig::Scheme::fp8;
      const std::string stored = fp8 && name == "qweight" ? "weight"
                                 : fp8 && name == "scale" ? "weight_scale"
                                                          : name;
      tensors.push_back({"layer." + stored, st_dtype(t->dtype()), t->shape(),
                         std::string(reinterpret_cast<const char*>(t->data()), t->nbytes())});
      part_bytes += t->nbytes();
    }
    const auto path = dir_ / (tag + ".safetensors");
    write_file(path, safetensors_file(tensors));
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
      SCOPED_TRACE(tag + " to " + std::string(dtype_name(dtype)));
      auto backend = make_host_device_backend({.copy_delay = std::chrono::microseconds(20)});
      auto loader = make_weight_loader({.read_mode = ReadMode::read,
                                        .num_threads = 2,
                                        .max_staging_bytes = kStaging,
                                        .factories = {make_device_tensor_factory(backend)}});
      DequantizeSpec spec{.source = WeightSource::file(path),
                          .base = "layer",
                          .scheme = scheme,
                          .dtype = dtype,
                          .device = Device::cuda(0)};
      const auto got = load_dequantized(*loader, spec);
      spec.device = Device::cpu();
      const auto want = load_dequantized(*make_weight_loader(), spec);
      ASSERT_EQ(got->device(), Device::cuda(0));
      EXPECT_EQ(got->dtype(), want->dtype());
      EXPECT_EQ(got->shape(), want->shape());
      ASSERT_EQ(got->nbytes(), want->nbytes());
      std::vector<std::byte> back(got->nbytes());
      backend->copy_to_host(back.data(), got->data(), got->nbytes());
      std::vector<std::byte> expected(want->data(), want->data() + want->nbytes());
      EXPECT_EQ(test::first_difference(back, expected, dtype_element_size(dtype)), "");
      const auto counters = host_device_counters(*backend);
      EXPECT_EQ(counters.bytes_to_device, part_bytes);  // packed, never the dense weight
      EXPECT_LE(counters.peak_device_bytes, part_bytes + got->nbytes() + kStaging);
    }
  }

  TempDir dir_;
};

TEST_F(DeviceLoadDequantizedTest, GptqAndAwqCheckpointsDequantizeOnTheDevice) {
  for (const auto& config : test::gptq_configs())
    expect_device_matches(QuantizeConfig::Scheme::gptq, test::quantized_parts(config, 64, 256, 11),
                          "gptq" + std::to_string(config.bits) + (config.desc_act ? "act" : ""));
  for (const auto& config : test::awq_configs())
    expect_device_matches(QuantizeConfig::Scheme::awq, test::quantized_parts(config, 64, 256, 12),
                          "awq" + std::to_string(config.group_size));
}

TEST_F(DeviceLoadDequantizedTest, Fp8BlockScalesAndInt8Int4BundlesDequantizeOnTheDevice) {
  for (const test::Fp8Grid& g : test::kFp8Grids)
    for (DType scale : {DType::f32, DType::bf16})
      expect_device_matches(
          QuantizeConfig::Scheme::fp8,
          test::fp8_case(DType::f8_e4m3, g.out, g.in, g.rows, g.cols, scale, 13).parts,
          "fp8_" + std::to_string(g.rows) + "x" + std::to_string(g.cols) +
              std::string(dtype_name(scale)));
  for (bool symmetric : {true, false})
    expect_device_matches(
        QuantizeConfig::Scheme::int8,
        test::quantized_parts({.scheme = QuantizeConfig::Scheme::int8, .symmetric = symmetric}, 48,
                              96, 14),
        symmetric ? "int8sym" : "int8");
  expect_device_matches(
      QuantizeConfig::Scheme::int4,
      test::quantized_parts({.scheme = QuantizeConfig::Scheme::int4, .group_size = 32}, 48, 96, 15),
      "int4");
}

TEST_F(DeviceLoadDequantizedTest, ABadGroupIndexFailsAsOnTheCpu) {
  auto parts = test::quantized_parts(test::gptq_configs()[1], 64, 256, 11);  // 2 bits, desc_act
  std::vector<std::byte> bad(parts.at("g_idx")->nbytes());
  std::memcpy(bad.data(), parts.at("g_idx")->data(), bad.size());
  const int32_t outside = 1000;
  std::memcpy(bad.data() + 4 * 17, &outside, 4);
  std::vector<StTensor> tensors;
  for (const auto& [name, t] : parts)
    tensors.push_back({"layer." + name, st_dtype(t->dtype()), t->shape(),
                       name == "g_idx"
                           ? std::string(reinterpret_cast<const char*>(bad.data()), bad.size())
                           : std::string(reinterpret_cast<const char*>(t->data()), t->nbytes())});
  const auto path = dir_ / "bad.safetensors";
  write_file(path, safetensors_file(tensors));
  auto backend = make_host_device_backend();
  auto loader = make_weight_loader({.factories = {make_device_tensor_factory(backend)}});
  const auto error = error_of([&] {
    load_dequantized(*loader, {.source = WeightSource::file(path),
                               .base = "layer",
                               .scheme = QuantizeConfig::Scheme::gptq,
                               .device = Device::cuda(0)});
  });
  EXPECT_EQ(error.code(), ErrorCode::shape_mismatch);
  EXPECT_NE(error.message().find("entry 17 is 1000"), std::string::npos) << error.what();
}

TEST_F(DeviceLoadTest, StreamingHandsOverEachTensorComplete) {
  auto backend = make_host_device_backend({.copy_delay = std::chrono::microseconds(50)});
  auto loader = make_weight_loader(config(ReadMode::read, make_device_tensor_factory(backend)));
  const auto want = make_weight_loader()->load_checkpoint(WeightSource::file(path_));
  std::mutex mutex;
  std::set<std::string> seen;
  loader->load_tensors_streaming(specs(Device::cuda(0)), [&](const std::string& name, TensorRef t) {
    expect_same(*backend, *t, *want.at(name));  // complete when handed over
    std::lock_guard lock(mutex);
    EXPECT_TRUE(seen.insert(name).second) << name;
  });
  EXPECT_EQ(seen.size(), names_.size());
}

TEST_F(DeviceLoadTest, ACancelledStreamEndsWithCancelled) {
  auto backend = make_host_device_backend({.copy_delay = std::chrono::microseconds(50)});
  auto loader = make_weight_loader(config(ReadMode::read, make_device_tensor_factory(backend)));
  int delivered = 0;
  const auto error = error_of([&] {
    loader->load_tensors_streaming(specs(Device::cuda(0)), [&](const std::string&, TensorRef) {
      if (++delivered == 3) throw Error(ErrorCode::cancelled, "enough");
    });
  });
  EXPECT_EQ(error.code(), ErrorCode::cancelled);
  // The loader is still usable after the cancelled load.
  EXPECT_EQ(loader->load_tensors(specs(Device::cuda(0))).size(), names_.size());
}

TEST_F(DeviceLoadTest, TheDeviceArenaPlacesTensorsInTheCallersBlock) {
  auto backend = make_host_device_backend();
  const uint64_t size = 1 << 20;
  std::byte* block = backend->allocate_device(size);
  {
    auto loader = make_weight_loader(
        config(ReadMode::read, make_device_arena_tensor_factory(backend, block, size)));
    const auto want = make_weight_loader()->load_tensors(specs(Device::cpu()));
    const auto got = loader->load_tensors(specs(Device::cuda(0)));
    for (size_t i = 0; i < got.size(); ++i) {
      expect_same(*backend, *got[i], *want[i]);
      EXPECT_GE(got[i]->data(), block);
      EXPECT_LE(got[i]->data() + got[i]->nbytes(), block + size);
    }
  }
  backend->free_device(block);
}

TEST_F(DeviceLoadTest, WithoutACudaDeviceALoadFailsNamingTheDevice) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  const auto error = error_of([&] { make_weight_loader()->load_tensors(specs(Device::cuda(1))); });
  EXPECT_EQ(error.code(), ErrorCode::unsupported);
  EXPECT_NE(error.message().find("cuda:1"), std::string::npos) << error.what();
  EXPECT_NE(error.message().find(cuda_compiled_in() ? "CUDA device" : "without CUDA"),
            std::string::npos)
      << error.what();
  const auto caps = make_weight_loader()->capabilities();
  EXPECT_EQ(std::count(caps.devices.begin(), caps.devices.end(), Device::Kind::cuda), 0);
}

// The real file calls, noting which descriptors were opened with O_DIRECT and where each read
// on them landed.
class DirectReadsOs final : public OsWrapper {
 public:
  DirectReadsOs() : OsWrapper(real_os()) {}

  struct Read {
    const std::byte* buffer;
    size_t count;
  };

  int open(const char* path, int flags, mode_t mode) const override {
    const int fd = OsWrapper::open(path, flags, mode);
    std::lock_guard lock(mutex_);
    if (fd >= 0 && (flags & O_DIRECT)) direct_fds_.insert(fd);
    return fd;
  }
  ssize_t pread(int fd, void* buf, size_t count, off_t offset) const override {
    {
      std::lock_guard lock(mutex_);
      if (direct_fds_.contains(fd)) reads_.push_back({static_cast<std::byte*>(buf), count});
    }
    return OsWrapper::pread(fd, buf, count, offset);
  }

  std::vector<Read> direct_reads() const {
    std::lock_guard lock(mutex_);
    return reads_;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::set<int> direct_fds_;
  mutable std::vector<Read> reads_;
};

TEST_F(DeviceLoadTest, ODirectReadsLandInTheStagingSlotsForUnalignedTensors) {
  // Byte tensors of odd sizes, so that every tensor starts and ends off a 4 KiB boundary,
  // and f32 ones cast on the device.
  std::vector<StTensor> tensors;
  std::vector<std::string> names;
  for (int i = 0; i < 12; ++i) {
    const size_t n = 1 + static_cast<size_t>(i) * 4099 % 21001;
    std::string bytes(n, '\0');
    for (size_t k = 0; k < n; ++k) bytes[k] = static_cast<char>((k * 31 + i) % 251);
    tensors.push_back({"u" + std::to_string(i), "U8", {static_cast<int64_t>(n)}, bytes});
    const size_t m = 1 + static_cast<size_t>(i) * 1237 % 9001;
    tensors.push_back({"f" + std::to_string(i),
                       "F32",
                       {static_cast<int64_t>(m)},
                       f32_bytes(values(m, static_cast<float>(i)))});
  }
  const auto path = dir_ / "odd.safetensors";
  write_file(path, safetensors_file(tensors));
  std::vector<TensorSpec> on_device, on_cpu;
  for (const auto& t : tensors) {
    std::vector<Transformation> steps;
    if (t.name[0] == 'f') steps.push_back(Cast{DType::bf16});
    on_device.push_back({.name = t.name,
                         .device = Device::cuda(0),
                         .source = WeightSource::file(path),
                         .transformations = steps});
    on_cpu.push_back(on_device.back());
    on_cpu.back().device = Device::cpu();
  }
  auto os = std::make_shared<DirectReadsOs>();
  auto backend = make_host_device_backend({.copy_delay = std::chrono::microseconds(20)});
  auto loader = make_default_loader_with_os(
      config(ReadMode::direct, make_device_tensor_factory(backend)), os);
  const auto got = loader->load_tensors(on_device);
  const auto want = make_weight_loader()->load_tensors(on_cpu);
  for (size_t i = 0; i < got.size(); ++i) expect_same(*backend, *got[i], *want[i]);
  EXPECT_LE(backend->peak_pinned_bytes(), kStaging);
  const auto reads = os->direct_reads();
  if (reads.empty()) GTEST_SKIP() << "the file system of " << path << " refuses O_DIRECT";
  // Every O_DIRECT read landed in a pinned staging slot: no bounce buffer beside the ring.
  for (const auto& read : reads)
    EXPECT_TRUE(is_pinned_by(*backend, read.buffer, read.count))
        << read.count << " bytes read to " << static_cast<const void*>(read.buffer);
}

// The emulated GPUDirect Storage of the host device backend: a load to it under each mode,
// on a backend with and without the direct path.
class DirectStorageTest : public DeviceLoadTest {
 protected:
  std::vector<TensorRef> load(GpuDirectStorage gds, const std::shared_ptr<DeviceBackend>& backend,
                              std::vector<Transformation> steps = {}) {
    WeightLoaderConfig c = config(ReadMode::read, make_device_tensor_factory(backend));
    c.gpu_direct_storage = gds;
    return make_weight_loader(c)->load_tensors(specs(Device::cuda(0), std::move(steps)));
  }

  void expect_cpu_bytes(DeviceBackend& backend, const std::vector<TensorRef>& got,
                        std::vector<Transformation> steps = {}) {
    const auto want = make_weight_loader()->load_tensors(specs(Device::cpu(), std::move(steps)));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_same(backend, *got[i], *want[i]);
  }

  // Whether this file system gives the file an O_DIRECT descriptor, as the direct path needs.
  bool file_takes_o_direct() const {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_DIRECT);
    if (fd >= 0) ::close(fd);
    return fd >= 0;
  }
};

TEST_F(DirectStorageTest, AutomaticReadsStraightToTheDeviceWhenTheBackendOffersIt) {
  if (!file_takes_o_direct()) GTEST_SKIP() << "the file system refuses O_DIRECT";
  auto backend = make_host_device_backend({.direct_storage = true});
  expect_cpu_bytes(*backend, load(GpuDirectStorage::automatic, backend));
  EXPECT_EQ(backend->peak_pinned_bytes(), 0u) << "no staging slot was needed";
  // A device cast reads the stored bytes into the slots' device scratch, still with no pinned
  // memory.
  expect_cpu_bytes(*backend, load(GpuDirectStorage::required, backend, {Cast{DType::bf16}}),
                   {Cast{DType::bf16}});
  EXPECT_EQ(backend->peak_pinned_bytes(), 0u);
}

TEST_F(DirectStorageTest, WithoutTheDirectPathOrWithItOffTheLoadStagesThroughTheRing) {
  auto without = make_host_device_backend();
  expect_cpu_bytes(*without, load(GpuDirectStorage::automatic, without));
  EXPECT_GT(without->peak_pinned_bytes(), 0u);
  auto off = make_host_device_backend({.direct_storage = true});
  expect_cpu_bytes(*off, load(GpuDirectStorage::off, off));
  EXPECT_GT(off->peak_pinned_bytes(), 0u);
}

TEST_F(DirectStorageTest, RequiredWithoutTheDirectPathFailsNamingTheDeviceAndTheReason) {
  auto backend = make_host_device_backend();
  const auto error = error_of([&] { load(GpuDirectStorage::required, backend); });
  EXPECT_EQ(error.code(), ErrorCode::unsupported);
  EXPECT_NE(error.message().find("cuda:0"), std::string::npos) << error.what();
  EXPECT_NE(error.message().find("offers no direct path"), std::string::npos) << error.what();
  // A tensor transformed on the host (two steps) cannot go straight to the device either.
  if (!file_takes_o_direct()) return;
  auto direct = make_host_device_backend({.direct_storage = true});
  const auto on_host = error_of([&] {
    load(GpuDirectStorage::required, direct, {Cast{DType::f16}, Scale{2.0}});
  });
  EXPECT_EQ(on_host.code(), ErrorCode::unsupported);
  EXPECT_NE(on_host.message().find("transformed on the host"), std::string::npos) << on_host.what();
}

}  // namespace
}  // namespace ballast::test
