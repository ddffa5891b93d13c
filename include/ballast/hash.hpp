// Content hashes of loaded tensors: the sha256 of a tensor's logical bytes (contiguous,
// row-major, little-endian, in its dtype), which is what `ballast hash` prints and what the
// golden manifest records. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "ballast/tensor.hpp"

namespace ballast {

std::string sha256_hex(std::span<const std::byte> bytes);
// Hashes a host tensor's bytes.
std::string sha256_hex(const Tensor& tensor);

}  // namespace ballast
