// The host-to-device pipeline (see device_upload.hpp).
#include "cuda/device_upload.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "cuda/strided_chunks.hpp"

namespace ballast {
namespace {

// The converted elements of a cast chunk start at this alignment in the scratch (the largest
// element size a strided copy moves).
constexpr uint64_t kConvertedAlignment = 16;

// The slot size: the chunk, but small enough that two slots fit the budget (one filling while
// the other's copy runs), in whole 4 KiB pages (O_DIRECT reads land in slots).
uint64_t slot_bytes_for(const DeviceUploaderOptions& options) {
  constexpr uint64_t kPage = 4096;
  const uint64_t bytes = std::min(options.chunk_bytes, options.staging_bytes / 2);
  return std::max(bytes / kPage * kPage, kPage);
}

}  // namespace

DeviceUploader::DeviceUploader(std::shared_ptr<DeviceBackend> backend,
                               DeviceUploaderOptions options)
    : backend_(std::move(backend)),
      ring_(backend_, options.staging_bytes, slot_bytes_for(options)) {
  try {
    for (unsigned i = 0; i < std::max(options.streams, 1u); ++i)
      streams_.push_back(backend_->create_stream());
  } catch (...) {
    for (DeviceStream s : streams_) backend_->destroy_stream(s);
    throw;
  }
}

DeviceUploader::~DeviceUploader() {
  for (DeviceStream s : streams_) {
    try {
      backend_->synchronize_stream(s);
    } catch (...) {  // a failed device: nothing is left to wait for
    }
    backend_->destroy_stream(s);
  }
}

bool DeviceUploader::can_cast(DType from, DType to) const {
  return dtype_info(to).block_elements == 1 && backend_->can_cast(from, to);
}

DeviceStream DeviceUploader::next_stream() {
  return streams_[next_.fetch_add(1, std::memory_order_relaxed) % streams_.size()];
}

void DeviceUploader::upload(const HostFill& fill, uint64_t stored_bytes, std::byte* dst,
                            std::optional<DeviceCast> cast) {
  upload_from_slots(
      [&](uint64_t at, uint64_t n, std::span<std::byte> slot) {
        fill(at, slot.first(n));
        return uint64_t{0};
      },
      0, stored_bytes, dst, cast);
}

void DeviceUploader::upload_from_slots(const SlotFill& fill, uint64_t headroom,
                                       uint64_t stored_bytes, std::byte* dst,
                                       std::optional<DeviceCast> cast) {
  if (stored_bytes == 0) return;
  if (headroom >= ring_.slot_bytes())
    throw Error(ErrorCode::invalid_argument,
                fmt::format("staging slots of {} bytes leave no room beside a {}-byte head",
                            ring_.slot_bytes(), headroom));
  // A chunk holds whole units of the stored type: elements, or blocks of a block type.
  const uint64_t unit_bytes = cast ? dtype_info(cast->from).block_bytes : 1;
  const uint64_t unit_elements = cast ? dtype_info(cast->from).block_elements : 1;
  const uint64_t unit_out_bytes = cast ? *dtype_bytes_for(cast->to, unit_elements) : 1;
  const uint64_t room = ring_.slot_bytes() - headroom;
  const uint64_t chunk = std::max(room / unit_bytes * unit_bytes, unit_bytes);
  run_chunks(
      (stored_bytes + chunk - 1) / chunk, [&](uint64_t i, StagingSlot& slot, DeviceStream stream) {
        const uint64_t at = i * chunk;
        const uint64_t n = std::min(chunk, stored_bytes - at);
        std::byte* host = ring_.host(slot);
        const std::byte* bytes = host + fill(at, n, {host, ring_.slot_bytes()});
        if (cast) {
          std::byte* stored = ring_.scratch(slot);
          backend_->copy_to_device_async(stored, bytes, n, stream);
          backend_->cast_async(cast->from, stored, cast->to, dst + at / unit_bytes * unit_out_bytes,
                               n / unit_bytes * unit_elements, stream);
        } else {
          backend_->copy_to_device_async(dst + at, bytes, n, stream);
        }
      });
}

void DeviceUploader::upload_direct(const HostFill& fill, uint64_t stored_bytes, std::byte* dst,
                                   std::optional<DeviceCast> cast) {
  if (stored_bytes == 0) return;
  if (!cast) {
    fill(0, {dst, stored_bytes});
    return;
  }
  const uint64_t unit_bytes = dtype_info(cast->from).block_bytes;
  const uint64_t unit_elements = dtype_info(cast->from).block_elements;
  const uint64_t unit_out_bytes = *dtype_bytes_for(cast->to, unit_elements);
  const uint64_t chunk = std::max(ring_.slot_bytes() / unit_bytes * unit_bytes, unit_bytes);
  run_chunks(
      (stored_bytes + chunk - 1) / chunk, [&](uint64_t i, StagingSlot& slot, DeviceStream stream) {
        const uint64_t at = i * chunk;
        const uint64_t n = std::min(chunk, stored_bytes - at);
        std::byte* stored = ring_.scratch(slot);
        fill(at, {stored, n});
        backend_->cast_async(cast->from, stored, cast->to, dst + at / unit_bytes * unit_out_bytes,
                             n / unit_bytes * unit_elements, stream);
      });
}

bool DeviceUploader::can_upload_strided(DType stored, size_t rank,
                                        std::optional<DeviceCast> cast) const {
  const uint32_t in = dtype_element_size(stored);
  const uint32_t out = cast ? dtype_element_size(cast->to) : in;
  if (in == 0 || out == 0 || !backend_->can_strided_copy(out, rank)) return false;
  // A slot holds at least one element stored and converted, and the converted part's alignment.
  if (ring_.slot_bytes() < in + out + kConvertedAlignment) return false;
  return !cast || (cast->from == stored && dtype_info(cast->to).block_elements == 1 &&
                   backend_->can_cast(cast->from, cast->to));
}

void DeviceUploader::upload_strided(const ChunkFill& fill, ChunkLayout layout, DType stored,
                                    const Shape& shape, std::span<const int64_t> strides,
                                    std::byte* dst, std::optional<DeviceCast> cast) {
  const uint32_t in = dtype_element_size(stored);
  const uint32_t out = cast ? dtype_element_size(cast->to) : in;
  // A chunk's span, and its converted elements after it when cast, fit one slot's scratch.
  const uint64_t max_span =
      cast ? (ring_.slot_bytes() - kConvertedAlignment) / (in + out) : ring_.slot_bytes() / in;
  const StridedChunks chunks(shape, strides, max_span);
  run_chunks(chunks.count(), [&](uint64_t i, StagingSlot& slot, DeviceStream stream) {
    const StridedChunk c = chunks.at(i);
    // Packed: the chunk's elements in row-major order, read through row-major strides.
    std::vector<int64_t> packed(c.shape.size(), 1);
    for (size_t d = c.shape.size(); d-- > 1;) packed[d - 1] = packed[d] * c.shape[d];
    const uint64_t elements =
        layout == ChunkLayout::span ? c.span : static_cast<uint64_t>(packed[0] * c.shape[0]);
    std::byte* host = ring_.host(slot);
    fill(c, {host, elements * in});
    std::byte* scratch = ring_.scratch(slot);
    backend_->copy_to_device_async(scratch, host, elements * in, stream);
    const std::byte* source = scratch;
    if (cast) {
      std::byte* converted = scratch + (elements * in + kConvertedAlignment - 1) /
                                           kConvertedAlignment * kConvertedAlignment;
      backend_->cast_async(cast->from, scratch, cast->to, converted, elements, stream);
      source = converted;
    }
    backend_->strided_copy_async(source, dst + c.dst_offset * out, out, c.shape,
                                 layout == ChunkLayout::span ? strides : packed,
                                 chunks.dst_strides(), stream);
  });
}

void DeviceUploader::run_chunks(uint64_t chunks, const ChunkStep& step) {
  if (chunks == 0) return;
  // One stream per tensor: its chunks complete in order, so the last one's event is the
  // tensor's; concurrent tensors spread over the streams.
  DeviceStream stream = next_stream();
  StagingSlot* held = nullptr;
  try {
    for (uint64_t i = 0; i < chunks; ++i) {
      held = &ring_.acquire();
      step(i, *held, stream);
      backend_->record_event(held->event, stream);
      const bool last = i + 1 == chunks;
      if (last) backend_->synchronize_event(held->event);
      ring_.release(*std::exchange(held, nullptr), !last);
    }
  } catch (...) {
    try {
      backend_->synchronize_stream(stream);  // no queued work writes dst any longer
    } catch (...) {  // the device failed: the first error is the one to report
    }
    if (held) ring_.release(*held, false);
    throw;
  }
}

}  // namespace ballast
