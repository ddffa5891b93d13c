// A DeviceBackend whose "device" is host memory: device and pinned allocations are aligned host
// buffers, and each stream is a worker thread that runs its copies, casts and event records in
// order, after the call that queued them has returned. The pipeline's scheduling (the staging
// ring, buffer reuse after events, publishing after the last copy) is so tested on the CPU with
// real asynchrony. An optional delay before each copy widens the window in which a buffer
// reused too early would be overwritten before its copy ran.
#pragma once

#include <chrono>
#include <memory>

#include "cuda/device_backend.hpp"

namespace ballast {

struct HostDeviceBackendOptions {
  Device device = Device::cuda(0);  // the device it stands in for
  std::chrono::microseconds copy_delay{0};
};

std::shared_ptr<DeviceBackend> make_host_device_backend(HostDeviceBackendOptions options = {});

}  // namespace ballast
