// What every launcher of src/cuda/kernels shares: the launch configuration (256 threads a
// block, grid-stride loops over at most 2^16 blocks), the stream cast and the launch check.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "ballast/error.hpp"

namespace ballast::cuda {

constexpr unsigned kThreadsPerBlock = 256;
constexpr uint64_t kMaxBlocks = uint64_t{1} << 16;

inline unsigned blocks_for(uint64_t n) {
  const uint64_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

inline cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

// The first element index of this thread and the grid's stride, for grid-stride loops.
__device__ inline uint64_t first_index() { return uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; }
__device__ inline uint64_t grid_stride() { return uint64_t{gridDim.x} * blockDim.x; }

// Throws Error(io) naming `what` when the last launch (or call) on this thread failed.
inline void check_cuda(const char* what) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw Error(ErrorCode::io, std::string(what) + " failed: " + cudaGetErrorName(status) + ": " +
                                   cudaGetErrorString(status));
}

}  // namespace ballast::cuda
