// PrefixSource: a ByteSource over a remote object read by ranges that keeps the bytes read
// from its start (at least kPrefixReadAhead at a time, at most `max_bytes` in all). A header is
// parsed through it (by a probe before a download, or by a load before a LazyCachedSource
// downloads the object) and the download then starts after the kept prefix, so header reads
// that run from the start (safetensors, GGUF, .npy) cost no byte the download would not fetch
// anyway. Reads elsewhere go to the object itself. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ballast/byte_source.hpp"

namespace ballast {

inline constexpr uint64_t kPrefixReadAhead = 64 << 10;
inline constexpr uint64_t kMaxPrefixBytes = 64 << 20;

class PrefixSource final : public ByteSource {
 public:
  explicit PrefixSource(std::shared_ptr<ByteSource> ranged, uint64_t max_bytes = kMaxPrefixBytes)
      : ranged_(std::move(ranged)), max_bytes_(max_bytes) {}

  uint64_t size() const override { return ranged_->size(); }
  const std::string& name() const override { return ranged_->name(); }
  void read_at(uint64_t offset, std::span<std::byte> out) const override;

  // How many bytes from the start are kept.
  uint64_t kept() const;
  // The bytes [0, n) read so far, moved out (later reads keep them anew).
  std::vector<std::byte> take_prefix();

 private:
  std::shared_ptr<ByteSource> ranged_;
  uint64_t max_bytes_;
  mutable std::mutex mutex_;
  mutable std::vector<std::byte> prefix_;
};

}  // namespace ballast
