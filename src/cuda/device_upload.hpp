// DeviceUploader: the host-to-device pipeline. A tensor's bytes are produced on the host chunk
// by chunk (read from storage by the caller's `fill`, straight into a pinned slot of the
// staging ring: no second host copy) and each chunk is copied to the device asynchronously on
// one of several streams while the next chunk is read, so storage reads overlap bus transfers.
// A chunk may be cast on the device: its stored (smaller or equal) bytes cross the bus and a
// device cast writes the converted elements into place. A strided view (a transpose, a slice)
// crosses the bus as the stored spans it covers, scattered into place (and cast) on the device.
// A direct storage read (upload_direct) skips the host: it writes device memory itself, and a
// slot then lends only its device scratch. Pinned memory stays within the ring's budget,
// whatever the tensor sizes. Thread-safe: concurrent uploads share the ring and the streams.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "ballast/tensor.hpp"
#include "cuda/device_backend.hpp"
#include "cuda/staging_ring.hpp"
#include "cuda/strided_chunks.hpp"

namespace ballast {

// Produces host bytes [offset, offset + out.size()) of a tensor's stored bytes into `out`.
using HostFill = std::function<void(uint64_t offset, std::span<std::byte> out)>;
// Produces stored bytes [offset, offset + n) somewhere in `slot` (a whole staging slot,
// page-aligned) and returns where they begin in it: an O_DIRECT read lands the aligned range
// covering them (direct_read.hpp), so they begin past its unaligned head.
using SlotFill = std::function<uint64_t(uint64_t offset, uint64_t n, std::span<std::byte> slot)>;

struct DeviceCast {
  DType from;
  DType to;
};

struct DeviceUploaderOptions {
  uint64_t staging_bytes = 64 << 20;  // pinned memory of the ring, all slots together
  uint64_t chunk_bytes = 16 << 20;    // one slot; shrunk so that at least two fit the budget
  unsigned streams = 4;
};

class DeviceUploader {
 public:
  DeviceUploader(std::shared_ptr<DeviceBackend> backend, DeviceUploaderOptions options);
  DeviceUploader(const DeviceUploader&) = delete;
  DeviceUploader& operator=(const DeviceUploader&) = delete;
  ~DeviceUploader();

  DeviceBackend& backend() const { return *backend_; }
  const StagingRing& ring() const { return ring_; }

  // Whether `upload` can convert from -> to on the device (`from` may be a block type: ggml
  // blocks dequantize on the device).
  bool can_cast(DType from, DType to) const;

  // Writes `stored_bytes` bytes that `fill` produces to device memory at `dst`, cast on the
  // device when `cast` is set (dst then receives the converted elements). Returns once every
  // byte is in place; when `fill` or the device fails, rethrows once no queued work writes dst
  // or reads a slot any longer.
  void upload(const HostFill& fill, uint64_t stored_bytes, std::byte* dst,
              std::optional<DeviceCast> cast = std::nullopt);
  // As upload, with chunks of at most slot_bytes() - `headroom` stored bytes, each produced by
  // `fill` at the offset it returns (at most `headroom`) in its slot. Needs headroom below
  // slot_bytes().
  void upload_from_slots(const SlotFill& fill, uint64_t headroom, uint64_t stored_bytes,
                         std::byte* dst, std::optional<DeviceCast> cast = std::nullopt);
  // As upload, with `fill` writing the stored bytes straight into device memory (a direct
  // storage read, direct_storage.hpp): all of them into dst at once, or, when `cast` is set,
  // chunk by chunk into the staging slots' device scratch that the cast reads.
  void upload_direct(const HostFill& fill, uint64_t stored_bytes, std::byte* dst,
                     std::optional<DeviceCast> cast = std::nullopt);

  // Whether `upload_strided` can move a view of `rank` dimensions of `stored` elements, cast to
  // `cast` when set, to the device.
  bool can_upload_strided(DType stored, size_t rank, std::optional<DeviceCast> cast) const;

  // How a strided chunk's stored bytes lie in its slot: the span it covers as stored (the
  // elements between the chunk's too), or only its elements, packed in row-major order.
  enum class ChunkLayout { span, packed };
  // Produces a chunk's stored bytes, laid out as asked, into `out` (sized for them).
  using ChunkFill = std::function<void(const StridedChunk& chunk, std::span<std::byte> out)>;

  // Writes a strided view (shape and strides in elements of `stored`, positive where the extent
  // is above 1) to dst densely, row-major, cast on the device when `cast` is set: chunk by
  // chunk (strided_chunks.hpp), `fill` produces a chunk's stored bytes into a slot, they are
  // copied into the slot's device scratch (cast there, into the scratch's second part), and
  // scattered into place. Device memory beyond dst: the slots' scratch only. Returns and fails
  // as `upload`.
  void upload_strided(const ChunkFill& fill, ChunkLayout layout, DType stored, const Shape& shape,
                      std::span<const int64_t> strides, std::byte* dst,
                      std::optional<DeviceCast> cast = std::nullopt);

 private:
  // One chunk's work: fills the slot's host bytes and queues what reads them on `stream`.
  using ChunkStep = std::function<void(uint64_t chunk, StagingSlot& slot, DeviceStream stream)>;
  // Runs `chunks` steps on one stream, each in a slot of the ring, and returns once the last
  // has completed (see upload).
  void run_chunks(uint64_t chunks, const ChunkStep& step);
  DeviceStream next_stream();

  std::shared_ptr<DeviceBackend> backend_;
  StagingRing ring_;
  std::vector<DeviceStream> streams_;
  std::atomic<size_t> next_{0};
};

}  // namespace ballast
