// ZipArchive: a read-only view of a zip file (torch.save checkpoints, .npz archives) that takes
// every size and offset from the central directory, never from local headers alone.
//
// Why hand-written: libzip hides the data offset of a member, so it cannot give zero-copy
// views of stored members inside an mmap; we need exactly that. Inflation uses zlib.
// Supports ZIP64 (sizes and offsets above 4 GiB), data descriptors (local headers holding
// zeros), any member names. Hostile input: counts, name lengths and offsets are bounded and
// checked; member names with `..`, absolute paths or backslashes are refused; an archive that
// two readers could read differently is refused (invalid_format): more than one plausible end
// record, a directory not ending at its end records, bytes outside every member (prepended
// data, gaps), overlapping members, local headers or data descriptors that disagree with the
// directory, duplicate names, names that decode differently; a deflated
// member is inflated lazily with a bound on its size and on the inflate ratio (zip bombs fail
// with limit_exceeded), and its CRC-32 is checked.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ballast/byte_source.hpp"
#include "ballast/limits.hpp"
#include "util/op_count.hpp"

namespace ballast {

struct ZipMember {
  std::string name;
  uint16_t method = 0;  // 0 = stored, 8 = deflated; others are refused on open
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t data_offset = 0;  // absolute offset of the member's first data byte
  uint32_t crc32 = 0;
};

class ZipArchive {
 public:
  // Reads and validates the central directory. Throws Error(invalid_format) naming the byte
  // offset for a malformed archive, Error(limit_exceeded) past `limits`.
  static ZipArchive open(std::shared_ptr<ByteSource> source, const Limits& limits);

  const std::vector<ZipMember>& members() const { return members_; }
  // The member named `name`, or null; a hash lookup (an archive may hold a million members).
  const ZipMember* find(std::string_view name) const;

  // The member's uncompressed bytes as a ByteSource: a zero-copy slice for stored members (so
  // it maps when the archive maps), a lazily inflated buffer for deflated ones.
  std::shared_ptr<ByteSource> member_source(const ZipMember& member) const;

  const std::shared_ptr<ByteSource>& source() const { return source_; }

 private:
  std::shared_ptr<ByteSource> source_;
  Limits limits_;
  std::vector<ZipMember> members_;
  std::unordered_map<std::string, size_t, StringHash, CountedEqual> by_name_;
};

// True when `head` starts like a zip archive (local file header or empty-archive EOCD).
bool looks_like_zip(std::span<const std::byte> head);
// The name in the first local file header of `head`, for cheap content probes; empty when
// `head` holds no complete local header name.
std::string_view first_zip_member_name(std::span<const std::byte> head);

}  // namespace ballast
