// LazyCachedSource: a remote object with caching on that is not cached yet. It is read by
// ranges, as with caching off, until a load is about to read most of it: then it is downloaded
// into its cache (the object cache or the Hub cache) and every later read, mapping and local
// file comes from the cached blob. So a header parse (get_metadata, inspect) and a load of a
// few tensors fetch only the ranges they read and leave the cache alone, while a load of most
// of a file (or preload) downloads it once; so does any load of a file that the header reads
// brought whole already. The bytes read from the object's start (its header,
// up to kLazyPrefixBytes) are kept, so the download can start after them. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ballast/byte_source.hpp"
#include "io/local_file.hpp"
#include "remote/prefix_source.hpp"

namespace ballast {

inline constexpr uint64_t kLazyPrefixBytes = 1 << 20;

// Downloads the object into its cache (unless there already) and opens the blob; `prefix`
// holds the object's first bytes, read already.
using CacheFill = std::function<std::shared_ptr<ByteSource>(std::vector<std::byte> prefix)>;

class LazyCachedSource final : public ByteSource, public LocalFileBacked {
 public:
  // `ranged` reads the object by ranges; `fill` must yield the same object (same size, and the
  // version `ranged` reads: the caller pins it), else the fill fails with Error(integrity).
  LazyCachedSource(std::shared_ptr<ByteSource> ranged, CacheFill fill);

  uint64_t size() const override { return ranged_->size(); }
  const std::string& name() const override { return ranged_->name(); }
  void read_at(uint64_t offset, std::span<std::byte> out) const override;
  std::shared_ptr<const MappedRegion> mapping() const override;
  std::optional<LocalFile> local_file(bool want_direct) const override;

  // A load is about to read `bytes` of the object: when they and what loads announced before
  // reach half of its size, or when the header reads brought the whole object already (a small
  // file: caching it costs nothing more), it is downloaded into the cache first.
  void expect_reads(uint64_t bytes) const;
  // Downloads the object into the cache now (preload), unless done.
  void fill() const;

 private:
  const ByteSource* blob() const { return blob_view_.load(std::memory_order_acquire); }

  std::shared_ptr<PrefixSource> ranged_;
  CacheFill fill_;
  mutable std::atomic<uint64_t> expected_{0};
  mutable std::mutex fill_mutex_;
  mutable std::shared_ptr<ByteSource> blob_;  // set once, under fill_mutex_
  mutable std::atomic<const ByteSource*> blob_view_{nullptr};
};

// The same, for any source: a LazyCachedSource expects the reads or fills; others need neither.
void expect_reads(const ByteSource& source, uint64_t bytes);
void fill_cache(const ByteSource& source);

}  // namespace ballast
