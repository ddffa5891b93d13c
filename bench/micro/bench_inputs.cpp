// The micro-benchmarks' inputs (see bench_inputs.hpp).
#include "bench_inputs.hpp"

#include <cstring>

namespace ballast::bench {

std::vector<std::byte> patterned_bytes(size_t bytes) {
  std::vector<std::byte> out(bytes);
  // 0x3c.. / 0x3f.. high bytes keep every f16, bf16 and f32 finite and near 1.
  uint32_t state = 12345;
  for (size_t i = 0; i < bytes; ++i) {
    state = state * 1664525u + 1013904223u;
    out[i] = static_cast<std::byte>(i % 2 == 1 ? 0x3c : state >> 24);
  }
  return out;
}

std::string safetensors_in_memory(size_t tensors, size_t data_bytes) {
  const size_t each = data_bytes / tensors / 4 * 4;
  std::string header = "{";
  for (size_t i = 0; i < tensors; ++i) {
    if (i > 0) header += ',';
    header += "\"model.layers." + std::to_string(i) + ".weight\":{\"dtype\":\"F32\",\"shape\":[" +
              std::to_string(each / 4) + "],\"data_offsets\":[" + std::to_string(i * each) + "," +
              std::to_string((i + 1) * each) + "]}";
  }
  header += '}';
  const uint64_t length = header.size();
  std::string file(8, '\0');
  std::memcpy(file.data(), &length, 8);  // little-endian on every target we build for
  file += header;
  file.append(each * tensors, '\x01');
  return file;
}

}  // namespace ballast::bench
