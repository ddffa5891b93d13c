// StagingRing: a bounded set of pinned host buffers (slots) that reads land in and device copies
// start from. Slots are made on first need, never more than the budget allows, and reused in
// the order they were given back; a slot given back with work still queued on it is handed out
// again only after its event has completed, so a copy never reads a buffer being refilled.
// Thread-safe: the loader's workers share one ring per device.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "cuda/device_backend.hpp"

namespace ballast {

struct StagingSlot {
  std::byte* host = nullptr;     // pinned, slot_bytes long (lazy: a direct read needs none)
  std::byte* scratch = nullptr;  // device memory for stored bytes a device cast reads (lazy)
  DeviceEvent event = nullptr;   // recorded after the slot's last queued use
  bool pending = false;          // `event` was recorded and not yet waited for
};

class StagingRing {
 public:
  // At most budget_bytes / slot_bytes slots (at least one) of slot_bytes each.
  StagingRing(std::shared_ptr<DeviceBackend> backend, uint64_t budget_bytes, uint64_t slot_bytes);
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;
  ~StagingRing();

  uint64_t slot_bytes() const { return slot_bytes_; }
  size_t max_slots() const { return max_slots_; }

  // A free slot whose earlier work has completed; waits while every slot is in use.
  StagingSlot& acquire();
  // Gives a slot back; `pending`: an event was recorded on it after its last queued use.
  void release(StagingSlot& slot, bool pending);
  // The slot's pinned host buffer (slot_bytes), allocated on first use.
  std::byte* host(StagingSlot& slot);
  // The slot's device scratch (slot_bytes), allocated on first use.
  std::byte* scratch(StagingSlot& slot);

 private:
  std::shared_ptr<DeviceBackend> backend_;
  uint64_t slot_bytes_;
  size_t max_slots_;
  std::mutex mutex_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<StagingSlot>> slots_;  // every slot made
  std::deque<StagingSlot*> free_;                    // oldest given back first
  size_t making_ = 0;                                // slots being made outside the lock
};

}  // namespace ballast
