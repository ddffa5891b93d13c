// The arena TensorFactory (see ballast/arena.hpp).
#include <atomic>
#include <cstdint>

#include <fmt/format.h>

#include "ballast/arena.hpp"
#include "ballast/error.hpp"
#include "ballast/storage.hpp"

namespace ballast {
namespace {

class ArenaTensorFactory final : public TensorFactory {
 public:
  ArenaTensorFactory(std::span<std::byte> block, std::shared_ptr<const void> owner)
      : block_(block), owner_(std::move(owner)) {}

  Device device() const override { return Device::cpu(); }

  std::shared_ptr<Storage> allocate(uint64_t nbytes, size_t alignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("alignment {} is not a power of two", alignment));
    const auto base = reinterpret_cast<uintptr_t>(block_.data());
    uint64_t used = used_.load(std::memory_order_relaxed);
    uint64_t at = 0;
    do {
      // base + used stays inside the block, so neither sum can wrap.
      at = ((base + used + alignment - 1) & ~(uintptr_t{alignment} - 1)) - base;
      if (at > block_.size() || nbytes > block_.size() - at)
        throw Error(ErrorCode::limit_exceeded,
                    fmt::format("the arena has {} of its {} bytes left: {} bytes aligned to {} "
                                "do not fit",
                                block_.size() - used, block_.size(), nbytes, alignment));
    } while (!used_.compare_exchange_weak(used, at + nbytes, std::memory_order_relaxed));
    std::function<void()> release;
    if (owner_) release = [owner = owner_] {};
    return make_borrowed_storage(block_.data() + at, nbytes, std::move(release));
  }

 private:
  std::span<std::byte> block_;
  std::shared_ptr<const void> owner_;
  std::atomic<uint64_t> used_{0};
};

}  // namespace

std::shared_ptr<TensorFactory> make_arena_tensor_factory(std::span<std::byte> block,
                                                         std::shared_ptr<const void> owner) {
  return std::make_shared<ArenaTensorFactory>(block, std::move(owner));
}

}  // namespace ballast
