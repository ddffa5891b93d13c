// A remote object read by ranges until most of it is wanted (see lazy_cached_source.hpp).
#include "remote/lazy_cached_source.hpp"

#include <fmt/format.h>

#include "ballast/error.hpp"

namespace ballast {

LazyCachedSource::LazyCachedSource(std::shared_ptr<ByteSource> ranged, CacheFill fill)
    : ranged_(std::make_shared<PrefixSource>(std::move(ranged), kLazyPrefixBytes)),
      fill_(std::move(fill)) {}

void LazyCachedSource::read_at(uint64_t offset, std::span<std::byte> out) const {
  if (const ByteSource* cached = blob()) return cached->read_at(offset, out);
  ranged_->read_at(offset, out);
}

std::shared_ptr<const MappedRegion> LazyCachedSource::mapping() const {
  const ByteSource* cached = blob();
  return cached ? cached->mapping() : nullptr;
}

std::optional<LocalFile> LazyCachedSource::local_file(bool want_direct) const {
  const ByteSource* cached = blob();
  return cached ? local_file_of(*cached, want_direct) : std::nullopt;
}

void LazyCachedSource::expect_reads(uint64_t bytes) const {
  if (blob()) return;
  const uint64_t before = expected_.fetch_add(bytes);
  const uint64_t half = size() - size() / 2;
  if (bytes >= half || before >= half - bytes || ranged_->kept() == size()) fill();
}

void LazyCachedSource::fill() const {
  std::lock_guard lock(fill_mutex_);
  if (blob_) return;
  auto blob = fill_(ranged_->take_prefix());
  if (blob->size() != size())
    throw Error(ErrorCode::integrity,
                fmt::format("the cached object has {} bytes, the object read by ranges {}",
                            blob->size(), size()),
                {.source = name()});
  blob_ = std::move(blob);
  blob_view_.store(blob_.get(), std::memory_order_release);
}

void expect_reads(const ByteSource& source, uint64_t bytes) {
  if (const auto* lazy = dynamic_cast<const LazyCachedSource*>(&source)) lazy->expect_reads(bytes);
}

void fill_cache(const ByteSource& source) {
  if (const auto* lazy = dynamic_cast<const LazyCachedSource*>(&source)) lazy->fill();
}

}  // namespace ballast
