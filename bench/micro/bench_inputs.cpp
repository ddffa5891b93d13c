// The micro-benchmarks' inputs (see bench_inputs.hpp).
#include "bench_inputs.hpp"

#include "support/safetensors_writer.hpp"

namespace ballast::bench {

std::vector<std::byte> patterned_bytes(size_t bytes) {
  std::vector<std::byte> out(bytes);
  // Every odd byte is 0x3c, so each little-endian f16, bf16 and f32 has a high byte of 0x3c:
  // finite, neither NaN nor infinity, whatever the random low bytes are.
  uint32_t state = 12345;
  for (size_t i = 0; i < bytes; ++i) {
    state = state * 1664525u + 1013904223u;
    out[i] = static_cast<std::byte>(i % 2 == 1 ? 0x3c : state >> 24);
  }
  return out;
}

std::string safetensors_in_memory(size_t tensors, size_t data_bytes) {
  const size_t each = data_bytes / tensors / 4 * 4;
  std::vector<test::StTensor> entries;
  entries.reserve(tensors);
  for (size_t i = 0; i < tensors; ++i)
    entries.push_back({"model.layers." + std::to_string(i) + ".weight",
                       "F32",
                       {static_cast<int64_t>(each / 4)},
                       std::string(each, '\x01')});
  return test::safetensors_file(entries);
}

}  // namespace ballast::bench
