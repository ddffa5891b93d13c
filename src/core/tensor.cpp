// Tensor construction and the host TensorFactory.
#include "ballast/tensor.hpp"

#include <cstring>

#include "ballast/error.hpp"
#include "util/checked.hpp"

namespace ballast {

Tensor::Tensor(std::string name, DType dtype, Shape shape, std::shared_ptr<Storage> storage,
               uint64_t byte_offset, uint64_t nbytes)
    : name_(std::move(name)),
      dtype_(dtype),
      shape_(std::move(shape)),
      storage_(std::move(storage)),
      byte_offset_(byte_offset),
      nbytes_(nbytes) {
  if (!storage_ || !range_inside(byte_offset_, nbytes_, storage_->size()))
    throw Error(ErrorCode::invalid_argument, "tensor bytes lie outside their storage",
                {.tensor = name_});
}

uint64_t Tensor::numel() const { return checked_numel(shape_).value_or(0); }

void TensorFactory::upload(Storage& dst, uint64_t offset, const std::byte* src, uint64_t n) {
  if (!range_inside(offset, n, dst.size()))
    throw Error(ErrorCode::invalid_argument, "upload outside the destination storage");
  std::memcpy(dst.data() + offset, src, n);
}

namespace {

class CpuTensorFactory final : public TensorFactory {
 public:
  Device device() const override { return Device::cpu(); }
  std::shared_ptr<Storage> allocate(uint64_t nbytes, size_t alignment) override {
    return make_host_buffer(nbytes, alignment);
  }
};

}  // namespace

std::shared_ptr<TensorFactory> cpu_tensor_factory() {
  static const auto factory = std::make_shared<CpuTensorFactory>();
  return factory;
}

}  // namespace ballast
