// WeightFormat: which checkpoint format a source holds.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace ballast {

struct WeightFormat {
  enum class Kind : uint8_t { safetensors, pytorch, numpy, onnx, gguf, raw, custom };

  Kind kind = Kind::safetensors;
  std::string custom_id;  // only for Kind::custom: the id the parser was registered under

  static WeightFormat safetensors() { return {Kind::safetensors, {}}; }
  static WeightFormat pytorch() { return {Kind::pytorch, {}}; }
  static WeightFormat numpy() { return {Kind::numpy, {}}; }
  static WeightFormat onnx() { return {Kind::onnx, {}}; }
  static WeightFormat gguf() { return {Kind::gguf, {}}; }
  static WeightFormat raw() { return {Kind::raw, {}}; }
  static WeightFormat custom(std::string id) { return {Kind::custom, std::move(id)}; }

  auto operator<=>(const WeightFormat&) const = default;
};

// "safetensors", "pytorch", ..., or the custom id.
std::string to_string(const WeightFormat& format);
// The inverse of to_string; a name that is no built-in format becomes custom(name).
WeightFormat parse_format(std::string_view name);

}  // namespace ballast
