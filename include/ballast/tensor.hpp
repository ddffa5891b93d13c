// Tensor and TensorRef: a loaded tensor, immutable once returned, shared by reference.
//
// A Tensor is a contiguous, row-major array of `numel()` elements of `dtype()` starting at
// `data()`, inside a Storage that it keeps alive. TensorRef is the shared, const handle the
// loader hands out; it is safe to read from any thread. Quantizing transformations return a
// bundle: the main tensor plus named parts (`parts()`), e.g. "qweight", "scales", "qzeros".
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ballast/device.hpp"
#include "ballast/dtype.hpp"
#include "ballast/storage.hpp"

namespace ballast {

using Shape = std::vector<int64_t>;

class Tensor;
using TensorRef = std::shared_ptr<const Tensor>;

class Tensor {
 public:
  Tensor(std::string name, DType dtype, Shape shape, std::shared_ptr<Storage> storage,
         uint64_t byte_offset, uint64_t nbytes);

  const std::string& name() const { return name_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  uint64_t numel() const;
  uint64_t nbytes() const { return nbytes_; }
  Device device() const { return storage_->device(); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  uint64_t storage_offset() const { return byte_offset_; }
  // True when the bytes are a view of a mapped file (no copy was made).
  bool is_zero_copy() const { return storage_->kind() == StorageKind::mapped_file; }

  // Host (or device) address of element 0.
  const std::byte* data() const { return storage_->data() + byte_offset_; }
  std::span<const std::byte> bytes() const { return {data(), static_cast<size_t>(nbytes_)}; }
  // Typed host view; the caller picks a T that matches dtype() (no check for block types).
  template <typename T>
  std::span<const T> as() const {
    return {reinterpret_cast<const T*>(data()), static_cast<size_t>(nbytes_ / sizeof(T))};
  }

  // Named parts of a quantized bundle (empty for ordinary tensors).
  const std::map<std::string, TensorRef>& parts() const { return parts_; }
  void set_parts(std::map<std::string, TensorRef> parts) { parts_ = std::move(parts); }

 private:
  std::string name_;
  DType dtype_;
  Shape shape_;
  std::shared_ptr<Storage> storage_;
  uint64_t byte_offset_;
  uint64_t nbytes_;
  std::map<std::string, TensorRef> parts_;
};

// Allocates storage for loaded tensors on one kind of device. The loader always produces the
// bytes on the host first (or maps them); for a device factory it then calls `upload`.
// Implementations must be thread-safe: the loader calls them from its worker threads.
class TensorFactory {
 public:
  virtual ~TensorFactory() = default;
  virtual Device device() const = 0;
  virtual std::shared_ptr<Storage> allocate(uint64_t nbytes, size_t alignment) = 0;
  // Copies host bytes into `dst` at `offset` (for host storage: a memcpy).
  virtual void upload(Storage& dst, uint64_t offset, const std::byte* src, uint64_t n);
};

// The host factory: aligned buffers from the C++ allocator.
std::shared_ptr<TensorFactory> cpu_tensor_factory();

}  // namespace ballast
