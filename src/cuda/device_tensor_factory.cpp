// Device TensorFactories (see device_tensor_factory.hpp) and the public CUDA factory functions
// of ballast/cuda.hpp.
#include "cuda/device_tensor_factory.hpp"

#include <atomic>

#include "ballast/cuda.hpp"
#include "ballast/error.hpp"
#include "core/arena_space.hpp"
#include "cuda/cuda_backend.hpp"
#include "util/checked.hpp"

namespace ballast {
namespace {

// Device memory holding tensors; `owned` memory goes back to the backend with the last tensor.
class DeviceStorage final : public Storage {
 public:
  DeviceStorage(std::shared_ptr<DeviceBackend> backend, std::byte* data, uint64_t size, bool owned)
      : backend_(std::move(backend)), data_(data), size_(size), owned_(owned) {}
  ~DeviceStorage() override {
    if (owned_) backend_->free_device(data_);
  }
  DeviceStorage(const DeviceStorage&) = delete;
  DeviceStorage& operator=(const DeviceStorage&) = delete;

  StorageKind kind() const override { return StorageKind::device_buffer; }
  Device device() const override { return backend_->device(); }
  std::byte* data() const override { return data_; }
  uint64_t size() const override { return size_; }
  const std::shared_ptr<DeviceBackend>& backend() const { return backend_; }

 private:
  std::shared_ptr<DeviceBackend> backend_;
  std::byte* data_;
  uint64_t size_;
  bool owned_;
};

class FactoryBase : public DeviceTensorFactory {
 public:
  explicit FactoryBase(std::shared_ptr<DeviceBackend> backend) : backend_(std::move(backend)) {}
  Device device() const override { return backend_->device(); }
  const std::shared_ptr<DeviceBackend>& backend() const override { return backend_; }
  void upload(Storage& dst, uint64_t offset, const std::byte* src, uint64_t n) override {
    if (!range_inside(offset, n, dst.size()))
      throw Error(ErrorCode::invalid_argument, "upload outside the destination storage");
    backend_->copy_to_device(dst.data() + offset, src, n);
  }

 protected:
  std::shared_ptr<DeviceBackend> backend_;
};

class OwnedDeviceFactory final : public FactoryBase {
 public:
  using FactoryBase::FactoryBase;
  // cudaMalloc aligns to 256 bytes, more than any tensor alignment the loader asks for.
  std::shared_ptr<Storage> allocate(uint64_t nbytes, size_t) override {
    return std::make_shared<DeviceStorage>(backend_, backend_->allocate_device(nbytes), nbytes,
                                           true);
  }
};

class DeviceArenaFactory final : public FactoryBase {
 public:
  DeviceArenaFactory(std::shared_ptr<DeviceBackend> backend, std::byte* block, uint64_t bytes)
      : FactoryBase(std::move(backend)), block_(block), bytes_(bytes) {}
  std::shared_ptr<Storage> allocate(uint64_t nbytes, size_t alignment) override {
    const uint64_t at =
        claim_arena_space(used_, reinterpret_cast<uintptr_t>(block_), bytes_, nbytes, alignment);
    return std::make_shared<DeviceStorage>(backend_, block_ + at, nbytes, false);
  }

 private:
  std::byte* block_;
  uint64_t bytes_;
  std::atomic<uint64_t> used_{0};
};

}  // namespace

std::shared_ptr<DeviceBackend> device_backend_of(const Storage& storage) {
  const auto* device = dynamic_cast<const DeviceStorage*>(&storage);
  return device ? device->backend() : nullptr;
}

std::shared_ptr<DeviceTensorFactory> make_device_tensor_factory(
    std::shared_ptr<DeviceBackend> backend) {
  return std::make_shared<OwnedDeviceFactory>(std::move(backend));
}

std::shared_ptr<DeviceTensorFactory> make_device_arena_tensor_factory(
    std::shared_ptr<DeviceBackend> backend, std::byte* block, uint64_t bytes) {
  return std::make_shared<DeviceArenaFactory>(std::move(backend), block, bytes);
}

std::shared_ptr<TensorFactory> make_cuda_tensor_factory(int device) {
  return make_device_tensor_factory(cuda_backend(device));
}

std::shared_ptr<TensorFactory> make_cuda_arena_tensor_factory(void* device_memory, size_t bytes,
                                                              int device) {
  return make_device_arena_tensor_factory(cuda_backend(device),
                                          static_cast<std::byte*>(device_memory), bytes);
}

}  // namespace ballast
