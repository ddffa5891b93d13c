// A minimal safetensors writer for tests: builds files (valid or deliberately broken) from a
// header object and a data buffer, so corruption tables can say exactly what is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ballast::test {

struct StTensor {
  std::string name;
  std::string dtype;  // "F32", ...
  std::vector<int64_t> shape;
  std::string bytes;
};

// 8-byte length + header text + data, exactly as given (no validation).
std::string safetensors_bytes(const std::string& header_text, const std::string& data);
// A valid file holding `tensors` in order, with optional __metadata__.
std::string safetensors_file(const std::vector<StTensor>& tensors,
                             const nlohmann::json& metadata = nullptr);
// Little-endian bytes of floats.
std::string f32_bytes(const std::vector<float>& values);

}  // namespace ballast::test
