// Locating the central directory through the end records (see zip_end_records.hpp).
#include "formats/zip/zip_end_records.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "formats/zip/zip_fields.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"

namespace ballast::zip {
namespace {

class EndRecords {
 public:
  EndRecords(const ByteSource& source, const Limits& limits) : source_(source), limits_(limits) {}

  CentralDirectory locate() const {
    const uint64_t eocd_offset = find_end_record();
    std::vector<std::byte> eocd = source_.read(eocd_offset, kEocdBytes);
    Fields f{eocd};
    if (f.u16(4) != 0 || f.u16(6) != 0)
      fail(ErrorCode::unsupported, "multi-volume zip archives are not supported", eocd_offset);
    if (f.u16(8) != f.u16(10))
      fail(ErrorCode::invalid_format,
           fmt::format("end record counts {} entries on this disk but {} in all", f.u16(8),
                       f.u16(10)),
           eocd_offset);
    const CentralDirectory stated{f.u16(10), f.u32(12), f.u32(16)};
    const bool zip64 = has_zip64_locator(eocd_offset);
    if (!zip64 && (stated.entries == kSaturated16 || stated.size == kSaturated32 ||
                   stated.offset == kSaturated32))
      fail(ErrorCode::invalid_format, "ZIP64 fields without a ZIP64 locator", eocd_offset);
    const uint64_t records_start =
        zip64 ? eocd_offset - kZip64LocatorBytes - kZip64EocdBytes : eocd_offset;
    const CentralDirectory dir = zip64 ? zip64_directory(stated, eocd_offset) : stated;
    check_directory(dir, records_start);
    return dir;
  }

 private:
  [[noreturn]] void fail(ErrorCode code, std::string message, uint64_t offset) const {
    throw Error(code, std::move(message), {.source = source_.name(), .offset = offset});
  }

  // The last end-record signature with room for its record, as both references choose it.
  uint64_t find_end_record() const {
    const uint64_t size = source_.size();
    if (size < kEocdBytes)
      fail(ErrorCode::invalid_format,
           fmt::format("{} bytes are too few for a zip end-of-central-directory record", size), 0);
    const uint64_t tail_len = std::min(size, kEocdBytes + kMaxComment);
    const uint64_t tail_start = size - tail_len;
    std::vector<std::byte> tail = source_.read(tail_start, tail_len);
    Fields f{tail};
    uint64_t pos = tail_len - 4 + 1;
    while (pos-- > 0 && f.u32(pos) != kEocdSig) {
    }
    if (pos > tail_len)
      fail(ErrorCode::invalid_format, "no zip end-of-central-directory record", tail_start);
    if (pos + kEocdBytes > tail_len)
      fail(ErrorCode::invalid_format,
           "an end-of-central-directory signature lies in the file's last 21 bytes, where no "
           "record fits",
           tail_start + pos);
    const uint64_t comment = f.u16(pos + 20);
    if (pos + kEocdBytes + comment != tail_len)
      fail(ErrorCode::invalid_format,
           fmt::format("the end record's {}-byte comment does not end the file ({} bytes follow "
                       "the record)",
                       comment, tail_len - pos - kEocdBytes),
           tail_start + pos);
    // An earlier signature that also parses as a record ending the file is another reading.
    for (uint64_t other = pos; other-- > 0;) {
      if (f.u32(other) == kEocdSig && other + kEocdBytes + f.u16(other + 20) == tail_len)
        fail(ErrorCode::invalid_format,
             fmt::format("two end-of-central-directory records (at {} and {}) both end the file",
                         tail_start + other, tail_start + pos),
             tail_start + other);
    }
    return tail_start + pos;
  }

  // Both references treat a locator signature just before the end record as ZIP64.
  bool has_zip64_locator(uint64_t eocd_offset) const {
    if (eocd_offset < kZip64LocatorBytes) return false;
    std::vector<std::byte> sig = source_.read(eocd_offset - kZip64LocatorBytes, 4);
    return Fields{sig}.u32(0) == kZip64LocatorSig;
  }

  CentralDirectory zip64_directory(const CentralDirectory& stated, uint64_t eocd_offset) const {
    const uint64_t locator_offset = eocd_offset - kZip64LocatorBytes;
    if (locator_offset < kZip64EocdBytes)
      fail(ErrorCode::invalid_format, "a ZIP64 locator with no room for its ZIP64 end record",
           locator_offset);
    std::vector<std::byte> locator = source_.read(locator_offset, kZip64LocatorBytes);
    Fields l{locator};
    if (l.u32(4) != 0)
      fail(ErrorCode::unsupported, "multi-volume zip archives are not supported", locator_offset);
    if (l.u32(16) != 1)
      fail(ErrorCode::invalid_format,
           fmt::format("ZIP64 locator counts {} disks; a single-file archive has 1", l.u32(16)),
           locator_offset);
    // Python's zipfile reads the record just before the locator, miniz where it points.
    const uint64_t record_offset = locator_offset - kZip64EocdBytes;
    if (l.u64(8) != record_offset)
      fail(ErrorCode::invalid_format,
           fmt::format("ZIP64 locator points at {}, not at the ZIP64 end record right before "
                       "it ({})",
                       l.u64(8), record_offset),
           locator_offset);
    std::vector<std::byte> record = source_.read(record_offset, kZip64EocdBytes);
    Fields r{record};
    if (r.u32(0) != kZip64EocdSig)
      fail(ErrorCode::invalid_format, "bad ZIP64 end-of-central-directory signature",
           record_offset);
    if (r.u64(4) != kZip64EocdBytes - 12)
      fail(ErrorCode::invalid_format,
           fmt::format("ZIP64 end record states {} bytes; only the plain {}-byte record is read "
                       "alike by every reader",
                       r.u64(4), kZip64EocdBytes - 12),
           record_offset);
    if (r.u32(16) != 0 || r.u32(20) != 0)
      fail(ErrorCode::unsupported, "multi-volume zip archives are not supported", record_offset);
    if (r.u64(24) != r.u64(32))
      fail(ErrorCode::invalid_format,
           fmt::format("ZIP64 end record counts {} entries on this disk but {} in all", r.u64(24),
                       r.u64(32)),
           record_offset);
    const CentralDirectory dir{r.u64(32), r.u64(40), r.u64(48)};
    auto agrees = [](uint64_t plain, uint64_t saturated, uint64_t wide) {
      return plain == saturated || plain == wide;
    };
    if (!agrees(stated.entries, kSaturated16, dir.entries) ||
        !agrees(stated.size, kSaturated32, dir.size) ||
        !agrees(stated.offset, kSaturated32, dir.offset))
      fail(ErrorCode::invalid_format,
           fmt::format("end record (entries {}, directory {} bytes at {}) and ZIP64 end record "
                       "(entries {}, {} bytes at {}) disagree",
                       stated.entries, stated.size, stated.offset, dir.entries, dir.size,
                       dir.offset),
           eocd_offset);
    return dir;
  }

  void check_directory(const CentralDirectory& dir, uint64_t records_start) const {
    if (dir.size > limits_.max_header_bytes)
      fail(ErrorCode::limit_exceeded,
           limit_message("central directory size", dir.size, "max_header_bytes",
                         limits_.max_header_bytes),
           records_start);
    // Python's zipfile would read the directory from records_start - size whatever the
    // stated offset; miniz from the stated offset. They agree only when both are the same.
    if (checked_add(dir.offset, dir.size) != records_start)
      fail(ErrorCode::invalid_format,
           fmt::format("central directory [{}, +{}) does not end where its end records begin "
                       "({})",
                       dir.offset, dir.size, records_start),
           records_start);
    if (dir.entries > dir.size / kCentralBytes)
      fail(ErrorCode::invalid_format,
           fmt::format("{} entries cannot fit in a {}-byte central directory", dir.entries,
                       dir.size),
           records_start);
  }

  const ByteSource& source_;
  const Limits& limits_;
};

}  // namespace

CentralDirectory locate_central_directory(const ByteSource& source, const Limits& limits) {
  return EndRecords(source, limits).locate();
}

}  // namespace ballast::zip
