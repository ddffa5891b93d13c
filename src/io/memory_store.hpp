// MemoryStore: caller-owned bytes as a Store of one object (named ""), with no folder, so
// nothing lies beside it and it cannot be a shard index.
#pragma once

#include "io/store.hpp"

namespace ballast {

class MemoryStore final : public Store {
 public:
  // `bytes` stay valid while `owner` (which may be null) is held; `description` names them.
  MemoryStore(std::span<const std::byte> bytes, std::shared_ptr<const void> owner,
              std::string description);

  std::string named() const override { return {}; }
  bool exists(const std::string&) override { return true; }
  ShardInput open(const std::string&) override { return {bytes_, nullptr, {}}; }
  std::vector<std::byte> read_small(const std::string& object, uint64_t max_bytes) override;
  std::string sibling(const std::string& object, std::string_view relative) const override;
  std::string describe(const std::string&) const override { return bytes_->name(); }
  // The bytes' address: two buffers alike in size are different sources.
  std::string identity() const override;

 private:
  const void* address_;
  std::shared_ptr<ByteSource> bytes_;
};

}  // namespace ballast
