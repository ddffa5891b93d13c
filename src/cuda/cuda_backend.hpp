// The CUDA runtime DeviceBackend of a device. The runtime is linked statically, so on a machine
// without a driver or device cuda_device_count() is 0 and opening a device throws.
#pragma once

#include <memory>

#include "ballast/cuda.hpp"  // cuda_compiled_in, cuda_device_count
#include "cuda/device_backend.hpp"

namespace ballast {

// The process-wide backend of device `index` (opened once, shared by every loader). Throws
// Error(unsupported) naming "cuda:N" when ballast was built without CUDA or when the driver or
// the device is missing.
std::shared_ptr<DeviceBackend> cuda_backend(int index);

}  // namespace ballast
