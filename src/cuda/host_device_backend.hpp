// A DeviceBackend whose "device" is host memory: device and pinned allocations are aligned host
// buffers, and each stream is a worker thread that runs its copies, casts, strided copies (the
// CUDA kernels' element math, compiled for the CPU) and event records in order, after the call
// that queued them has returned. The pipeline's scheduling (the staging ring, buffer reuse
// after events, publishing after the last copy) and its routing of transforms to the device
// are so tested on the CPU with real asynchrony. An optional delay before each copy widens the
// window in which a buffer reused too early would be overwritten before its copy ran. It counts
// device memory (live and peak bytes) and the bytes copied to the device. Its pinned memory is
// page-aligned, as cudaHostAlloc's, so O_DIRECT reads land in the staging slots. It may offer a
// direct storage path (direct_storage.hpp) that emulates GPUDirect Storage with a pread into its
// "device" memory, so the loader's routing between that path and the pipeline is tested too.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "cuda/device_backend.hpp"

namespace ballast {

struct HostDeviceBackendOptions {
  Device device = Device::cuda(0);  // the device it stands in for
  std::chrono::microseconds copy_delay{0};
  bool direct_storage = false;  // offer the emulated direct path (under automatic and required)
};

std::shared_ptr<DeviceBackend> make_host_device_backend(HostDeviceBackendOptions options = {});

struct HostDeviceCounters {
  uint64_t device_bytes = 0;       // device memory allocated now
  uint64_t peak_device_bytes = 0;  // the most allocated at once
  uint64_t bytes_to_device = 0;    // every byte copied host to device
};

// The counters of a backend make_host_device_backend made (Error(invalid_argument) for another).
HostDeviceCounters host_device_counters(const DeviceBackend& backend);

// Whether [memory, memory + n) lies inside one pinned allocation of `backend` (a host device
// backend) that is not freed yet: tests check where reads land.
bool is_pinned_by(const DeviceBackend& backend, const std::byte* memory, uint64_t n);

}  // namespace ballast
