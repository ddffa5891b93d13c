// The host-to-device pipeline on the host-memory device backend: uploads of every size (zero,
// tiny, around the slot size, many slots) arrive byte for byte while copies run late on the
// stream threads; pinned staging never exceeds the budget, also with concurrent uploads; a
// read failure mid-way fails cleanly and leaves the ring usable; device casts match the host's;
// strided views (transposes, slices) split at every level of their stored order arrive as
// StridedGather gathers them, cast or not, through no device memory beyond the slots' scratch.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "ballast/error.hpp"
#include "cuda/device_upload.hpp"
#include "cuda/host_device_backend.hpp"
#include "loader/strided_gather.hpp"
#include "transform/cast.hpp"

namespace ballast::test {
namespace {

constexpr uint64_t kBudget = 32 << 10;  // 4 slots of 8 KiB
constexpr uint64_t kSlot = 8 << 10;

std::vector<std::byte> pattern(uint64_t n, unsigned seed) {
  std::vector<std::byte> bytes(n);
  for (uint64_t i = 0; i < n; ++i) bytes[i] = std::byte((i * 131 + seed * 7 + i / 251) & 0xff);
  return bytes;
}

// A fill that copies from `source`, as a read of a file into the slot would.
HostFill fill_from(const std::vector<std::byte>& source) {
  return [&source](uint64_t at, std::span<std::byte> out) {
    std::memcpy(out.data(), source.data() + at, out.size());
  };
}

std::shared_ptr<DeviceBackend> slow_backend() {
  return make_host_device_backend({.copy_delay = std::chrono::microseconds(200)});
}

std::vector<std::byte> device_bytes(DeviceBackend& backend, const std::byte* memory, uint64_t n) {
  std::vector<std::byte> out(n);
  backend.copy_to_host(out.data(), memory, n);
  return out;
}

TEST(DeviceUpload, EverySizeArrivesExactlyWithinTheStagingBudget) {
  auto backend = slow_backend();
  DeviceUploader uploader(backend, {.staging_bytes = kBudget, .chunk_bytes = kSlot, .streams = 2});
  EXPECT_EQ(uploader.ring().slot_bytes(), kSlot);
  for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{7}, kSlot - 1, kSlot, kSlot + 1,
                     5 * kSlot + 3, 3 * kBudget + 17}) {
    const auto source = pattern(n, static_cast<unsigned>(n));
    std::byte* dst = backend->allocate_device(n);
    uploader.upload(fill_from(source), n, dst);
    EXPECT_EQ(device_bytes(*backend, dst, n), source) << n << " bytes";
    backend->free_device(dst);
  }
  EXPECT_GT(backend->peak_pinned_bytes(), 0u);
  EXPECT_LE(backend->peak_pinned_bytes(), kBudget);
}

TEST(DeviceUpload, ConcurrentUploadsShareTheRingWithinTheBudget) {
  auto backend = slow_backend();
  DeviceUploader uploader(backend, {.staging_bytes = kBudget, .chunk_bytes = kSlot, .streams = 3});
  std::vector<std::vector<std::byte>> sources;
  for (unsigned t = 0; t < 6; ++t) sources.push_back(pattern(2 * kBudget + t * 1001, t));
  std::vector<std::byte*> targets;
  for (const auto& s : sources) targets.push_back(backend->allocate_device(s.size()));
  std::vector<std::thread> threads;
  for (size_t t = 0; t < sources.size(); ++t)
    threads.emplace_back(
        [&, t] { uploader.upload(fill_from(sources[t]), sources[t].size(), targets[t]); });
  for (auto& thread : threads) thread.join();
  for (size_t t = 0; t < sources.size(); ++t) {
    EXPECT_EQ(device_bytes(*backend, targets[t], sources[t].size()), sources[t]) << t;
    backend->free_device(targets[t]);
  }
  EXPECT_LE(backend->peak_pinned_bytes(), kBudget);
}

TEST(DeviceUpload, AReadFailureMidwayFailsCleanlyAndTheRingStaysUsable) {
  auto backend = slow_backend();
  DeviceUploader uploader(backend, {.staging_bytes = kBudget, .chunk_bytes = kSlot, .streams = 2});
  const auto source = pattern(6 * kSlot, 3);
  std::byte* dst = backend->allocate_device(source.size());
  const HostFill failing = [&](uint64_t at, std::span<std::byte> out) {
    if (at >= 3 * kSlot) throw Error(ErrorCode::io, "read failed");
    std::memcpy(out.data(), source.data() + at, out.size());
  };
  try {
    uploader.upload(failing, source.size(), dst);
    FAIL() << "the upload should have failed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
  }
  // Every slot came back: a full upload through all of them still completes.
  uploader.upload(fill_from(source), source.size(), dst);
  EXPECT_EQ(device_bytes(*backend, dst, source.size()), source);
  backend->free_device(dst);
  EXPECT_LE(backend->peak_pinned_bytes(), kBudget);
}

TEST(DeviceUpload, ADeviceCastConvertsTheStoredBytesAsTheHostDoes) {
  auto backend = slow_backend();
  DeviceUploader uploader(backend, {.staging_bytes = kBudget, .chunk_bytes = kSlot, .streams = 2});
  const uint64_t count = 3 * kSlot / 2 + 5;  // bf16 elements: spans several slots
  std::vector<std::byte> stored(count * 2);
  for (uint64_t i = 0; i < count; ++i) {
    const float value = static_cast<float>(i % 997) * 0.37f - 100.0f;
    cast_elements(DType::f32, reinterpret_cast<const std::byte*>(&value), DType::bf16,
                  stored.data() + 2 * i, 1);
  }
  for (DType to : {DType::f32, DType::f16, DType::f8_e4m3}) {
    ASSERT_TRUE(uploader.can_cast(DType::bf16, to));
    const uint64_t out_bytes = count * dtype_element_size(to);
    std::vector<std::byte> expected(out_bytes);
    cast_elements(DType::bf16, stored.data(), to, expected.data(), count);
    std::byte* dst = backend->allocate_device(out_bytes);
    uploader.upload(fill_from(stored), stored.size(), dst, DeviceCast{DType::bf16, to});
    EXPECT_EQ(device_bytes(*backend, dst, out_bytes), expected) << dtype_name(to);
    backend->free_device(dst);
  }
  EXPECT_FALSE(uploader.can_cast(DType::f32, DType::i4));  // packed targets convert on the host
}

TEST(DeviceUpload, GgmlBlocksDequantizeOnTheDeviceInWholeBlocks) {
  auto backend = slow_backend();
  DeviceUploader uploader(backend, {.staging_bytes = kBudget, .chunk_bytes = kSlot, .streams = 2});
  ASSERT_TRUE(uploader.can_cast(DType::q8_0, DType::f32));
  // q8_0: an f16 scale and 32 int8 quants per 34-byte block; 8 KiB slots hold 240 blocks.
  const uint64_t blocks = 700;
  std::vector<std::byte> stored(blocks * 34);
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint16_t scale = 0x3800 + static_cast<uint16_t>(b % 64);  // 0.5 and a little more
    std::memcpy(stored.data() + b * 34, &scale, 2);
    for (uint64_t q = 0; q < 32; ++q) stored[b * 34 + 2 + q] = std::byte((b * 7 + q * 13) & 0xff);
  }
  const uint64_t count = blocks * 32;
  std::vector<std::byte> expected(count * 4);
  cast_elements(DType::q8_0, stored.data(), DType::f32, expected.data(), count);
  std::byte* dst = backend->allocate_device(expected.size());
  uploader.upload(fill_from(stored), stored.size(), dst, DeviceCast{DType::q8_0, DType::f32});
  EXPECT_EQ(device_bytes(*backend, dst, expected.size()), expected);
  backend->free_device(dst);
}

struct StridedCase {
  const char* name;
  uint64_t offset;  // elements
  Shape shape;
  std::vector<int64_t> strides;
};

TEST(DeviceUpload, StridedViewsScatterIntoPlaceChunkByChunk) {
  // A [6, 40, 50] f32 source; finite values, so that every cast is defined.
  std::vector<std::byte> source(6 * 40 * 50 * 4);
  for (uint64_t i = 0; i < source.size() / 4; ++i) {
    const float value = static_cast<float>((i * 37) % 1999) * 0.25f - 200.0f;
    std::memcpy(source.data() + i * 4, &value, 4);
  }
  const std::vector<StridedCase> cases = {
      {"3-D transpose 0, 2", 0, {50, 40, 6}, {1, 50, 2000}},
      {"3-D transpose 1, 2", 0, {6, 50, 40}, {2000, 1, 50}},
      {"3-D column slice", 3, {6, 40, 44}, {2000, 50, 1}},
      {"3-D row slice", 250, {6, 28, 50}, {2000, 50, 1}},
      {"long transpose", 0, {6000, 2}, {1, 6000}},  // split along its innermost stored dimension
      {"sliced transpose", 101, {45, 30, 4}, {1, 50, 2000}},
  };
  for (const auto& c : cases)
    for (DType to : {DType::f32, DType::f16, DType::f8_e4m3}) {
      SCOPED_TRACE(std::string(c.name) + " to " + std::string(dtype_name(to)));
      auto backend = slow_backend();
      DeviceUploader uploader(backend,
                              {.staging_bytes = kBudget, .chunk_bytes = kSlot, .streams = 2});
      std::optional<DeviceCast> cast;
      if (to != DType::f32) cast = DeviceCast{DType::f32, to};
      ASSERT_TRUE(uploader.can_upload_strided(DType::f32, c.shape.size(), cast));
      View view;
      view.offset = c.offset * 4;
      view.dtype = DType::f32;
      view.shape = c.shape;
      view.strides = c.strides;
      const uint64_t n = view.numel();
      std::vector<std::byte> gathered(n * 4), expected(n * dtype_element_size(to));
      StridedGather(view, source.data()).gather(0, n, gathered.data());
      cast_elements(DType::f32, gathered.data(), to, expected.data(), n);
      for (auto layout : {DeviceUploader::ChunkLayout::span, DeviceUploader::ChunkLayout::packed}) {
        std::byte* dst = backend->allocate_device(expected.size());
        uploader.upload_strided(
            [&](const StridedChunk& chunk, std::span<std::byte> out) {
              const uint64_t at = view.offset + chunk.src_offset * 4;
              if (layout == DeviceUploader::ChunkLayout::span) {
                ASSERT_LE(at + out.size(), source.size());
                std::memcpy(out.data(), source.data() + at, out.size());
                return;
              }
              View part = view;
              part.offset = at;
              part.shape = chunk.shape;
              ASSERT_EQ(part.numel() * 4, out.size());
              StridedGather(part, source.data()).gather(0, part.numel(), out.data());
            },
            layout, DType::f32, c.shape, c.strides, dst, cast);
        EXPECT_EQ(device_bytes(*backend, dst, expected.size()), expected);
        backend->free_device(dst);
      }
      const auto counters = host_device_counters(*backend);
      EXPECT_LE(counters.peak_device_bytes, expected.size() + kBudget);
      EXPECT_LE(counters.bytes_to_device, 2 * source.size());
    }
}

}  // namespace
}  // namespace ballast::test
