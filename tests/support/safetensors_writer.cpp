// A minimal safetensors writer for tests (see safetensors_writer.hpp).
#include "support/safetensors_writer.hpp"

#include <cstring>

namespace ballast::test {

std::string safetensors_bytes(const std::string& header_text, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header_text.size();
  for (int i = 0; i < 8; ++i)
    out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + header_text + data;
}

std::string safetensors_file(const std::vector<StTensor>& tensors, const nlohmann::json& metadata) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  if (!metadata.is_null()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';
  return safetensors_bytes(text, data);
}

std::string f32_bytes(const std::vector<float>& values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

}  // namespace ballast::test
