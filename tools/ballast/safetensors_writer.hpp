// Writes a safetensors file from loaded tensors without holding them all in memory: tensor
// bytes stream into an unlinked scratch file as they arrive; finish() then writes the header
// (with __metadata__), copies the data after it in safetensors order and renames the result
// over the target, so the target is either the complete new file or untouched.
#pragma once

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ballast/ballast.hpp"

namespace ballast::cli {

class SafetensorsWriter {
 public:
  explicit SafetensorsWriter(std::filesystem::path target);
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // Throws Error(unsupported) for a dtype safetensors cannot name, Error(invalid_argument) for
  // a name written twice.
  void add(const Tensor& tensor);
  // Writes the file; `metadata` values become __metadata__ strings.
  void finish(const std::map<std::string, std::string>& metadata);

 private:
  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t scratch_offset;
    uint64_t nbytes;
  };

  std::filesystem::path target_;
  std::filesystem::path temp_;
  int scratch_fd_ = -1;
  int temp_fd_ = -1;
  uint64_t scratch_size_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace ballast::cli
