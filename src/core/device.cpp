// Device names: "cpu", "cuda:N", "rocm:N".
#include "ballast/device.hpp"

#include <charconv>

namespace ballast {

std::string to_string(Device device) {
  switch (device.kind) {
    case Device::Kind::cpu: return "cpu";
    case Device::Kind::cuda: return "cuda:" + std::to_string(device.index);
    case Device::Kind::rocm: return "rocm:" + std::to_string(device.index);
  }
  return "unknown";
}

std::optional<Device> parse_device(std::string_view text) {
  auto with_index = [](std::string_view rest, Device::Kind kind) -> std::optional<Device> {
    if (rest.empty()) return Device{kind, 0};
    if (rest.front() != ':') return std::nullopt;
    rest.remove_prefix(1);
    int index = -1;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), index);
    if (ec != std::errc() || end != rest.data() + rest.size() || index < 0) return std::nullopt;
    return Device{kind, index};
  };
  if (text == "cpu") return Device::cpu();
  if (text.starts_with("cuda")) return with_index(text.substr(4), Device::Kind::cuda);
  if (text.starts_with("rocm")) return with_index(text.substr(4), Device::Kind::rocm);
  return std::nullopt;
}

}  // namespace ballast
