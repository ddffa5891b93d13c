// A ranged source that keeps the bytes read from its start (see prefix_source.hpp).
#include "remote/prefix_source.hpp"

#include <algorithm>
#include <cstring>

namespace ballast {

void PrefixSource::read_at(uint64_t offset, std::span<std::byte> out) const {
  const uint64_t size = ranged_->size();
  const bool inside = offset <= size && out.size() <= size - offset;
  if (inside && offset + out.size() <= max_bytes_) {
    std::lock_guard lock(mutex_);
    const uint64_t kept = prefix_.size();
    if (offset <= kept) {
      const uint64_t end = offset + out.size();
      if (end > kept) {
        const uint64_t to = std::min({size, max_bytes_, std::max(end, kept + kPrefixReadAhead)});
        prefix_.resize(to);
        try {
          ranged_->read_at(kept, std::span(prefix_.data() + kept, to - kept));
        } catch (...) {
          prefix_.resize(kept);
          throw;
        }
      }
      if (!out.empty()) std::memcpy(out.data(), prefix_.data() + offset, out.size());
      return;
    }
  }
  ranged_->read_at(offset, out);  // not from the prefix (the source checks the range), unlocked
}

uint64_t PrefixSource::kept() const {
  std::lock_guard lock(mutex_);
  return prefix_.size();
}

std::vector<std::byte> PrefixSource::take_prefix() {
  std::lock_guard lock(mutex_);
  return std::move(prefix_);
}

}  // namespace ballast
