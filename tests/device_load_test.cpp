// Loads to a device through the loader, on the host-memory device backend standing in for
// cuda:0: every read mode gives the bytes of a CPU load for many tensors (bigger than the
// staging ring, tiny, zero-size) and for transforms (a cast on the device, a transpose and a
// slice through the host), within the staging budget; streaming hands each tensor over
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
#include "io/os.hpp"
#include "loader/default_loader.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

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

TEST_F(DeviceLoadTest, ATransposeLoadsThroughTheHostAndMatches) {
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
