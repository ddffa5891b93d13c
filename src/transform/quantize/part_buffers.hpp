// The output buffers of one quantization, by part name: a kernel asks for "scales" as floats
// and writes into the bundle's storage directly, with no intermediate copy.
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <string>

namespace ballast {

class PartBuffers {
 public:
  void add(const std::string& name, std::span<std::byte> bytes) { parts_[name] = bytes; }
  bool has(const std::string& name) const { return parts_.contains(name); }

  // The part's bytes as T (storage is aligned for every T the layouts use).
  template <typename T>
  std::span<T> as(const std::string& name) const {
    std::span<std::byte> bytes = parts_.at(name);
    return {reinterpret_cast<T*>(bytes.data()), bytes.size() / sizeof(T)};
  }

 private:
  std::map<std::string, std::span<std::byte>> parts_;
};

}  // namespace ballast
