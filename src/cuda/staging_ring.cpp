// The pinned staging ring (see staging_ring.hpp).
#include "cuda/staging_ring.hpp"

#include <algorithm>

namespace ballast {

StagingRing::StagingRing(std::shared_ptr<DeviceBackend> backend, uint64_t budget_bytes,
                         uint64_t slot_bytes)
    : backend_(std::move(backend)),
      slot_bytes_(std::max<uint64_t>(slot_bytes, 1)),
      max_slots_(std::max<uint64_t>(budget_bytes / slot_bytes_, 1)) {}

StagingRing::~StagingRing() {
  for (auto& slot : slots_) {
    if (slot->pending) backend_->synchronize_event(slot->event);
    backend_->destroy_event(slot->event);
    if (slot->host) backend_->free_pinned(slot->host, slot_bytes_);
    if (slot->scratch) backend_->free_device(slot->scratch);
  }
}

StagingSlot& StagingRing::acquire() {
  std::unique_lock lock(mutex_);
  returned_.wait(lock, [&] { return !free_.empty() || slots_.size() + making_ < max_slots_; });
  if (!free_.empty()) {
    StagingSlot* slot = free_.front();
    free_.pop_front();
    lock.unlock();
    if (slot->pending) {
      backend_->synchronize_event(slot->event);
      slot->pending = false;
    }
    return *slot;
  }
  ++making_;
  lock.unlock();
  auto slot = std::make_unique<StagingSlot>();
  try {
    slot->event = backend_->create_event();
  } catch (...) {
    lock.lock();
    --making_;
    returned_.notify_one();
    throw;
  }
  lock.lock();
  --making_;
  slots_.push_back(std::move(slot));
  return *slots_.back();
}

void StagingRing::release(StagingSlot& slot, bool pending) {
  {
    std::lock_guard lock(mutex_);
    slot.pending = pending;
    free_.push_back(&slot);
  }
  returned_.notify_one();
}

std::byte* StagingRing::host(StagingSlot& slot) {
  if (!slot.host) slot.host = backend_->allocate_pinned(slot_bytes_);
  return slot.host;
}

std::byte* StagingRing::scratch(StagingSlot& slot) {
  if (!slot.scratch) slot.scratch = backend_->allocate_device(slot_bytes_);
  return slot.scratch;
}

}  // namespace ballast
