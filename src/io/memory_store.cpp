// Caller-owned bytes as a Store (see memory_store.hpp).
#include "io/memory_store.hpp"

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "util/error_text.hpp"

namespace ballast {

MemoryStore::MemoryStore(std::span<const std::byte> bytes, std::shared_ptr<const void> owner,
                         std::string description)
    : address_(bytes.data()),
      bytes_(make_memory_source(bytes, std::move(owner), std::move(description))) {}

std::vector<std::byte> MemoryStore::read_small(const std::string& object, uint64_t max_bytes) {
  if (bytes_->size() > max_bytes)
    throw Error(ErrorCode::limit_exceeded,
                limit_message("object size", bytes_->size(), "max_header_bytes", max_bytes),
                {.source = describe(object)});
  return bytes_->read(0, bytes_->size());
}

std::string MemoryStore::sibling(const std::string& object, std::string_view relative) const {
  throw Error(ErrorCode::unsupported,
              fmt::format("bytes in memory have nothing beside them (asked for '{}')", relative),
              {.source = describe(object)});
}

std::string MemoryStore::identity() const { return fmt::format("@{}", address_); }

}  // namespace ballast
