// TensorFactories whose tensors live in a DeviceBackend's memory: one allocation per tensor,
// or an arena in one block of device memory the caller owns. The loader recognises them and
// fills their storage through the host-to-device pipeline (device_upload.hpp).
#pragma once

#include <memory>

#include "ballast/tensor.hpp"
#include "cuda/device_backend.hpp"

namespace ballast {

class DeviceTensorFactory : public TensorFactory {
 public:
  virtual const std::shared_ptr<DeviceBackend>& backend() const = 0;
};

std::shared_ptr<DeviceTensorFactory> make_device_tensor_factory(
    std::shared_ptr<DeviceBackend> backend);

// The backend whose memory holds `storage` when one of these factories made it, else null.
std::shared_ptr<DeviceBackend> device_backend_of(const Storage& storage);

// `block` (device memory, `bytes` long) stays the caller's; tensors are placed one after
// another in it.
std::shared_ptr<DeviceTensorFactory> make_device_arena_tensor_factory(
    std::shared_ptr<DeviceBackend> backend, std::byte* block, uint64_t bytes);

}  // namespace ballast
