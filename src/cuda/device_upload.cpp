// The host-to-device pipeline (see device_upload.hpp).
#include "cuda/device_upload.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "ballast/error.hpp"

namespace ballast {
namespace {

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

void DeviceUploader::upload_direct(const HostFill& fill, uint64_t stored_bytes, std::byte* dst,
                                   std::optional<DeviceCast> cast) {
  if (stored_bytes == 0) return;
  if (!cast) {
    fill(0, {dst, stored_bytes});
    return;
  }
  DeviceStream stream = next_stream();
  const uint64_t unit_bytes = dtype_info(cast->from).block_bytes;
  const uint64_t unit_elements = dtype_info(cast->from).block_elements;
  const uint64_t unit_out_bytes = *dtype_bytes_for(cast->to, unit_elements);
  const uint64_t chunk = std::max(ring_.slot_bytes() / unit_bytes * unit_bytes, unit_bytes);
  StagingSlot* held = nullptr;
  try {
    for (uint64_t at = 0; at < stored_bytes; at += chunk) {
      const uint64_t n = std::min(chunk, stored_bytes - at);
      held = &ring_.acquire();
      std::byte* stored = ring_.scratch(*held);
      fill(at, {stored, n});
      backend_->cast_async(cast->from, stored, cast->to, dst + at / unit_bytes * unit_out_bytes,
                           n / unit_bytes * unit_elements, stream);
      backend_->record_event(held->event, stream);
      const bool last = at + n >= stored_bytes;
      if (last) backend_->synchronize_event(held->event);
      ring_.release(*std::exchange(held, nullptr), !last);
    }
  } catch (...) {
    try {
      backend_->synchronize_stream(stream);  // no queued cast writes dst any longer
    } catch (...) {  // the device failed: the first error is the one to report
    }
    if (held) ring_.release(*held, false);
    throw;
  }
}

void DeviceUploader::upload_from_slots(const SlotFill& fill, uint64_t headroom,
                                       uint64_t stored_bytes, std::byte* dst,
                                       std::optional<DeviceCast> cast) {
  if (stored_bytes == 0) return;
  if (headroom >= ring_.slot_bytes())
    throw Error(ErrorCode::invalid_argument,
                fmt::format("staging slots of {} bytes leave no room beside a {}-byte head",
                            ring_.slot_bytes(), headroom));
  // One stream per tensor: its chunks complete in order, so the last one's event is the
  // tensor's; concurrent tensors spread over the streams.
  DeviceStream stream = next_stream();
  // A chunk holds whole units of the stored type: elements, or blocks of a block type.
  const uint64_t unit_bytes = cast ? dtype_info(cast->from).block_bytes : 1;
  const uint64_t unit_elements = cast ? dtype_info(cast->from).block_elements : 1;
  const uint64_t unit_out_bytes = cast ? *dtype_bytes_for(cast->to, unit_elements) : 1;
  const uint64_t room = ring_.slot_bytes() - headroom;
  const uint64_t chunk = std::max(room / unit_bytes * unit_bytes, unit_bytes);
  StagingSlot* held = nullptr;
  try {
    for (uint64_t at = 0; at < stored_bytes; at += chunk) {
      const uint64_t n = std::min(chunk, stored_bytes - at);
      held = &ring_.acquire();
      std::byte* host = ring_.host(*held);
      const std::byte* bytes = host + fill(at, n, {host, ring_.slot_bytes()});
      if (cast) {
        std::byte* stored = ring_.scratch(*held);
        backend_->copy_to_device_async(stored, bytes, n, stream);
        backend_->cast_async(cast->from, stored, cast->to, dst + at / unit_bytes * unit_out_bytes,
                             n / unit_bytes * unit_elements, stream);
      } else {
        backend_->copy_to_device_async(dst + at, bytes, n, stream);
      }
      backend_->record_event(held->event, stream);
      const bool last = at + n >= stored_bytes;
      if (last) backend_->synchronize_event(held->event);
      ring_.release(*std::exchange(held, nullptr), !last);
    }
  } catch (...) {
    try {
      backend_->synchronize_stream(stream);  // no queued copy writes dst any longer
    } catch (...) {  // the device failed: the first error is the one to report
    }
    if (held) ring_.release(*held, false);
    throw;
  }
}

}  // namespace ballast
