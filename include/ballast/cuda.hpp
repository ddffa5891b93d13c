// Loading tensors straight into CUDA device memory (docs/gpu.md).
//
// A TensorSpec whose device is cuda(n) loads into memory of device n through the
// host-to-device pipeline: reads land in a bounded ring of pinned staging buffers (at most
// WeightLoaderConfig::max_staging_bytes) and are copied asynchronously while the next bytes
// are read; casts run on the device. By default the loader allocates each tensor with
// cudaMalloc; put one of these factories in WeightLoaderConfig::factories to choose. A
// returned tensor's bytes are complete on the device (the copies have been synchronized).
//
// Without a CUDA device or driver, or in a build without CUDA, a cuda(n) load fails with
// Error(unsupported) naming "cuda:n" and the reason (not_found is kept for missing files and
// tensors).
#pragma once

#include <cstddef>
#include <memory>

#include "ballast/tensor.hpp"

namespace ballast {

// True when this ballast was built with the CUDA backend.
bool cuda_compiled_in();
// Devices the CUDA driver reports (0 without CUDA, a driver or a device).
int cuda_device_count();

// Tensors in their own cudaMalloc'd memory of `device`, freed when the last tensor goes.
std::shared_ptr<TensorFactory> make_cuda_tensor_factory(int device = 0);

// Tensors placed one after another in `bytes` bytes of device memory at `device_memory`,
// which the caller owns and keeps alive while the tensors live (an engine's own allocator).
// allocate() throws Error(limit_exceeded) when a tensor does not fit in what is left.
std::shared_ptr<TensorFactory> make_cuda_arena_tensor_factory(void* device_memory, size_t bytes,
                                                              int device = 0);

}  // namespace ballast
