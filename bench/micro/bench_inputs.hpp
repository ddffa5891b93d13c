// Inputs the micro-benchmarks share: sizes, filled buffers and in-memory safetensors files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ballast::bench {

// Large enough that every kernel streams from memory, not from a cache level.
inline constexpr size_t kStreamBytes = 64u << 20;

// `bytes` bytes of a fixed pseudo-random pattern (finite floats of any 2- or 4-byte dtype).
std::vector<std::byte> patterned_bytes(size_t bytes);

// A safetensors file of `tensors` F32 tensors sharing `data_bytes` (each a multiple of 4).
std::string safetensors_in_memory(size_t tensors, size_t data_bytes);

}  // namespace ballast::bench
