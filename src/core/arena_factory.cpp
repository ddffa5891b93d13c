// The arena TensorFactory (see ballast/arena.hpp).
#include <atomic>
#include <cstdint>

#include "ballast/arena.hpp"
#include "ballast/storage.hpp"
#include "core/arena_space.hpp"

namespace ballast {
namespace {

class ArenaTensorFactory final : public TensorFactory {
 public:
  ArenaTensorFactory(std::span<std::byte> block, std::shared_ptr<const void> owner)
      : block_(block), owner_(std::move(owner)) {}

  Device device() const override { return Device::cpu(); }

  std::shared_ptr<Storage> allocate(uint64_t nbytes, size_t alignment) override {
    const uint64_t at = claim_arena_space(used_, reinterpret_cast<uintptr_t>(block_.data()),
                                          block_.size(), nbytes, alignment);
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
