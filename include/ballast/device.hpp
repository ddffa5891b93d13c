// Device: where a tensor's bytes live (host memory, or a CUDA / ROCm device by index).
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace ballast {

struct Device {
  enum class Kind : uint8_t { cpu, cuda, rocm };

  Kind kind = Kind::cpu;
  int index = 0;

  static constexpr Device cpu() { return {Kind::cpu, 0}; }
  static constexpr Device cuda(int n = 0) { return {Kind::cuda, n}; }
  static constexpr Device rocm(int n = 0) { return {Kind::rocm, n}; }

  bool is_host() const { return kind == Kind::cpu; }
  auto operator<=>(const Device&) const = default;
};

// "cpu", "cuda:0", "rocm:1".
std::string to_string(Device device);
// Parses "cpu", "cuda", "cuda:N", "rocm", "rocm:N".
std::optional<Device> parse_device(std::string_view text);

}  // namespace ballast
