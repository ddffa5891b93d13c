// WeightFormat names.
#include "ballast/format.hpp"

namespace ballast {

std::string to_string(const WeightFormat& format) {
  switch (format.kind) {
    case WeightFormat::Kind::safetensors: return "safetensors";
    case WeightFormat::Kind::pytorch: return "pytorch";
    case WeightFormat::Kind::numpy: return "numpy";
    case WeightFormat::Kind::onnx: return "onnx";
    case WeightFormat::Kind::gguf: return "gguf";
    case WeightFormat::Kind::raw: return "raw";
    case WeightFormat::Kind::custom: return format.custom_id;
  }
  return "unknown";
}

WeightFormat parse_format(std::string_view name) {
  for (auto kind :
       {WeightFormat::Kind::safetensors, WeightFormat::Kind::pytorch, WeightFormat::Kind::numpy,
        WeightFormat::Kind::onnx, WeightFormat::Kind::gguf, WeightFormat::Kind::raw}) {
    WeightFormat f{kind, {}};
    if (to_string(f) == name) return f;
  }
  return WeightFormat::custom(std::string(name));
}

}  // namespace ballast
