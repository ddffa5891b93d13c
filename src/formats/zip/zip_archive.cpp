// Zip central-directory reader (see zip_archive.hpp). Every size and offset comes from the
// central directory (ZIP64 fields where present); local headers are read only to find where a
// member's data starts, and must agree with the central directory on the name.
#include "formats/zip/zip_archive.hpp"

#include <algorithm>
#include <array>
#include <unordered_set>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "formats/zip/inflated_source.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"

namespace ballast {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEocdSig = 0x06054b50;
constexpr uint32_t kZip64EocdSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kEocdBytes = 22;
constexpr uint64_t kZip64EocdBytes = 56;
constexpr uint64_t kZip64LocatorBytes = 20;
constexpr uint64_t kCentralBytes = 46;
constexpr uint64_t kLocalBytes = 30;
constexpr uint64_t kMaxComment = 0xffff;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kFlagEncrypted = 0x0001;
constexpr uint16_t kFlagStrongEncryption = 0x0040;

// Little-endian fields of a byte buffer, bounds-checked by the caller's sizes.
struct Fields {
  std::span<const std::byte> bytes;
  uint16_t u16(size_t at) const {
    return static_cast<uint16_t>(static_cast<uint16_t>(bytes[at]) |
                                 static_cast<uint16_t>(bytes[at + 1]) << 8);
  }
  uint32_t u32(size_t at) const { return u16(at) | static_cast<uint32_t>(u16(at + 2)) << 16; }
  uint64_t u64(size_t at) const { return u32(at) | static_cast<uint64_t>(u32(at + 4)) << 32; }
};

struct Directory {
  uint64_t entries = 0;
  uint64_t size = 0;
  uint64_t offset = 0;
};

class Reader {
 public:
  Reader(const ByteSource& source, const Limits& limits) : source_(source), limits_(limits) {}

  std::vector<ZipMember> read() {
    Directory dir = read_directory();
    std::vector<std::byte> cd = source_.read(dir.offset, dir.size);
    std::vector<ZipMember> members;
    std::vector<uint64_t> header_offsets;
    std::unordered_set<std::string, StringHash, CountedEqual> names;
    uint64_t at = 0;
    for (uint64_t i = 0; i < dir.entries; ++i) {
      count_op();
      uint64_t header_offset = 0;
      ZipMember m = central_entry(cd, dir.offset, at, header_offset);
      if (!names.insert(m.name).second)
        fail(ErrorCode::invalid_format, fmt::format("duplicate member name '{}'", m.name),
             dir.offset + at);
      m.data_offset = data_offset(m, header_offset);
      members.push_back(std::move(m));
      header_offsets.push_back(header_offset);
    }
    check_no_overlap(members, header_offsets, dir.offset);
    return members;
  }

 private:
  [[noreturn]] void fail(ErrorCode code, std::string message, uint64_t offset) const {
    throw Error(code, std::move(message), {.source = source_.name(), .offset = offset});
  }

  // The EOCD record is the last 22 bytes before a comment of its stated length.
  Directory read_directory() const {
    const uint64_t size = source_.size();
    if (size < kEocdBytes)
      fail(ErrorCode::invalid_format,
           fmt::format("{} bytes are too few for a zip end-of-central-directory record", size), 0);
    const uint64_t tail_len = std::min(size, kEocdBytes + kMaxComment);
    const uint64_t tail_start = size - tail_len;
    std::vector<std::byte> tail = source_.read(tail_start, tail_len);
    Fields f{tail};
    for (uint64_t pos = tail_len - kEocdBytes + 1; pos-- > 0;) {
      if (f.u32(pos) != kEocdSig || pos + kEocdBytes + f.u16(pos + 20) != tail_len) continue;
      return directory_from_eocd(f, pos, tail_start + pos);
    }
    fail(ErrorCode::invalid_format, "no zip end-of-central-directory record", tail_start);
  }

  Directory directory_from_eocd(Fields f, uint64_t pos, uint64_t eocd_offset) const {
    if (f.u16(pos + 4) != 0 || f.u16(pos + 6) != 0)
      fail(ErrorCode::unsupported, "multi-volume zip archives are not supported", eocd_offset);
    Directory dir{f.u16(pos + 10), f.u32(pos + 12), f.u32(pos + 16)};
    if (dir.entries == 0xffff || dir.size == 0xffffffff || dir.offset == 0xffffffff)
      dir = zip64_directory(eocd_offset);
    if (dir.size > limits_.max_header_bytes)
      fail(ErrorCode::limit_exceeded,
           limit_message("central directory size", dir.size, "max_header_bytes",
                         limits_.max_header_bytes),
           eocd_offset);
    if (!range_inside(dir.offset, dir.size, eocd_offset))
      fail(ErrorCode::invalid_format,
           fmt::format("central directory [{}, +{}) lies outside the {} bytes before its end "
                       "record",
                       dir.offset, dir.size, eocd_offset),
           eocd_offset);
    if (dir.entries > dir.size / kCentralBytes)
      fail(ErrorCode::invalid_format,
           fmt::format("{} entries cannot fit in a {}-byte central directory", dir.entries,
                       dir.size),
           eocd_offset);
    return dir;
  }

  Directory zip64_directory(uint64_t eocd_offset) const {
    if (eocd_offset < kZip64LocatorBytes)
      fail(ErrorCode::invalid_format, "ZIP64 fields without a ZIP64 locator", eocd_offset);
    const uint64_t locator_offset = eocd_offset - kZip64LocatorBytes;
    std::vector<std::byte> locator = source_.read(locator_offset, kZip64LocatorBytes);
    Fields l{locator};
    if (l.u32(0) != kZip64LocatorSig)
      fail(ErrorCode::invalid_format, "ZIP64 fields without a ZIP64 locator", locator_offset);
    const uint64_t record_offset = l.u64(8);
    if (!range_inside(record_offset, kZip64EocdBytes, locator_offset))
      fail(ErrorCode::invalid_format, "ZIP64 end record lies outside the archive", locator_offset);
    std::vector<std::byte> record = source_.read(record_offset, kZip64EocdBytes);
    Fields r{record};
    if (r.u32(0) != kZip64EocdSig)
      fail(ErrorCode::invalid_format, "bad ZIP64 end-of-central-directory signature",
           record_offset);
    if (r.u32(16) != 0 || r.u32(20) != 0)
      fail(ErrorCode::unsupported, "multi-volume zip archives are not supported", record_offset);
    return {r.u64(32), r.u64(40), r.u64(48)};
  }

  ZipMember central_entry(std::span<const std::byte> cd, uint64_t cd_offset, uint64_t& at,
                          uint64_t& header_offset) const {
    const uint64_t entry_offset = cd_offset + at;
    if (!range_inside(at, kCentralBytes, cd.size()))
      fail(ErrorCode::invalid_format, "central directory entry runs past the directory",
           entry_offset);
    Fields f{cd.subspan(at)};
    if (f.u32(0) != kCentralSig)
      fail(ErrorCode::invalid_format, "bad central directory entry signature", entry_offset);
    const uint16_t flags = f.u16(8);
    const uint64_t name_len = f.u16(28), extra_len = f.u16(30), comment_len = f.u16(32);
    const uint64_t var_len = name_len + extra_len + comment_len;
    if (!range_inside(at + kCentralBytes, var_len, cd.size()))
      fail(ErrorCode::invalid_format, "central directory entry runs past the directory",
           entry_offset);
    ZipMember m;
    m.name.assign(reinterpret_cast<const char*>(cd.data() + at + kCentralBytes), name_len);
    m.method = f.u16(10);
    m.crc32 = f.u32(16);
    m.compressed_size = f.u32(20);
    m.uncompressed_size = f.u32(24);
    header_offset = f.u32(42);
    const uint16_t start_disk = f.u16(34);
    apply_zip64(m, header_offset, cd.subspan(at + kCentralBytes + name_len, extra_len),
                entry_offset);
    check_name(m.name, entry_offset);
    if ((flags & (kFlagEncrypted | kFlagStrongEncryption)) != 0 || m.method == 99)
      fail(ErrorCode::unsupported, fmt::format("member '{}' is encrypted", m.name), entry_offset);
    if (m.method != 0 && m.method != 8)
      fail(ErrorCode::unsupported,
           fmt::format("member '{}' uses compression method {} (only stored and deflated are "
                       "supported)",
                       m.name, m.method),
           entry_offset);
    if (m.method == 0 && m.compressed_size != m.uncompressed_size)
      fail(ErrorCode::invalid_format,
           fmt::format("stored member '{}' has compressed size {} but uncompressed size {}", m.name,
                       m.compressed_size, m.uncompressed_size),
           entry_offset);
    if (start_disk != 0 && start_disk != 0xffff)
      fail(ErrorCode::unsupported, "multi-volume zip archives are not supported", entry_offset);
    at += kCentralBytes + var_len;
    return m;
  }

  // The ZIP64 extra field holds, in order, only the fields whose 32-bit value is saturated.
  void apply_zip64(ZipMember& m, uint64_t& header_offset, std::span<const std::byte> extra,
                   uint64_t entry_offset) const {
    const bool need_uncompressed = m.uncompressed_size == 0xffffffff;
    const bool need_compressed = m.compressed_size == 0xffffffff;
    const bool need_offset = header_offset == 0xffffffff;
    if (!need_uncompressed && !need_compressed && !need_offset) return;
    Fields f{extra};
    for (uint64_t at = 0; at + 4 <= extra.size();) {
      const uint16_t id = f.u16(at);
      const uint64_t len = f.u16(at + 2);
      if (!range_inside(at + 4, len, extra.size())) break;
      if (id == kZip64ExtraId) {
        Fields z{extra.subspan(at + 4, len)};
        uint64_t pos = 0;
        auto next = [&](uint64_t& value) {
          if (pos + 8 > len)
            fail(ErrorCode::invalid_format, "ZIP64 extra field is too short", entry_offset);
          value = z.u64(pos);
          pos += 8;
        };
        if (need_uncompressed) next(m.uncompressed_size);
        if (need_compressed) next(m.compressed_size);
        if (need_offset) next(header_offset);
        return;
      }
      at += 4 + len;
    }
    fail(ErrorCode::invalid_format,
         fmt::format("member '{}' has saturated 32-bit fields but no ZIP64 extra field", m.name),
         entry_offset);
  }

  void check_name(const std::string& name, uint64_t entry_offset) const {
    auto refuse = [&](std::string_view why) {
      fail(ErrorCode::invalid_format, fmt::format("member name '{}' is refused: {}", name, why),
           entry_offset);
    };
    if (name.empty()) refuse("it is empty");
    if (name.find('\0') != std::string::npos) refuse("it contains a NUL byte");
    if (name.find('\\') != std::string::npos) refuse("it contains a backslash");
    if (name.front() == '/') refuse("it is an absolute path");
    if (name.size() >= 2 && name[1] == ':') refuse("it starts with a drive letter");
    for (size_t begin = 0; begin <= name.size();) {
      size_t end = std::min(name.find('/', begin), name.size());
      if (name.compare(begin, end - begin, "..") == 0) refuse("it contains a '..' component");
      begin = end + 1;
    }
  }

  // Data starts after the local header's own name and extra field, which must be in bounds.
  uint64_t data_offset(const ZipMember& m, uint64_t header_offset) const {
    const uint64_t size = source_.size();
    if (!range_inside(header_offset, kLocalBytes, size))
      fail(ErrorCode::invalid_format,
           truncated_message(checked_add(header_offset, kLocalBytes), size,
                             fmt::format("local header of '{}'", m.name)),
           header_offset);
    std::vector<std::byte> header = source_.read(header_offset, kLocalBytes);
    Fields f{header};
    if (f.u32(0) != kLocalSig)
      fail(ErrorCode::invalid_format, fmt::format("bad local header signature for '{}'", m.name),
           header_offset);
    const uint64_t name_len = f.u16(26), extra_len = f.u16(28);
    const uint64_t name_offset = header_offset + kLocalBytes;
    if (!range_inside(name_offset, name_len + extra_len, size))
      fail(ErrorCode::invalid_format,
           truncated_message(checked_add(name_offset, name_len + extra_len), size,
                             fmt::format("local header of '{}'", m.name)),
           header_offset);
    std::vector<std::byte> local_name = source_.read(name_offset, name_len);
    if (std::string_view(reinterpret_cast<const char*>(local_name.data()), name_len) != m.name)
      fail(ErrorCode::invalid_format,
           fmt::format("local header name differs from the central directory's '{}'", m.name),
           header_offset);
    const uint64_t data = name_offset + name_len + extra_len;
    if (!range_inside(data, m.compressed_size, size))
      fail(ErrorCode::invalid_format,
           truncated_message(checked_add(data, m.compressed_size), size,
                             fmt::format("data of '{}'", m.name)),
           data);
    return data;
  }

  // Members (local header through data) must not share bytes with each other or the directory.
  void check_no_overlap(const std::vector<ZipMember>& members,
                        const std::vector<uint64_t>& header_offsets, uint64_t cd_offset) const {
    std::vector<size_t> order(members.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return header_offsets[a] < header_offsets[b]; });
    for (size_t k = 0; k < order.size(); ++k) {
      const ZipMember& m = members[order[k]];
      const uint64_t end = m.data_offset + m.compressed_size;
      const uint64_t next = k + 1 < order.size() ? header_offsets[order[k + 1]] : cd_offset;
      if (end > next)
        fail(ErrorCode::invalid_format,
             fmt::format("member '{}' overlaps the next member or the central directory", m.name),
             header_offsets[order[k]]);
    }
  }

  const ByteSource& source_;
  const Limits& limits_;
};

}  // namespace

ZipArchive ZipArchive::open(std::shared_ptr<ByteSource> source, const Limits& limits) {
  ZipArchive archive;
  archive.members_ = Reader(*source, limits).read();
  archive.by_name_.reserve(archive.members_.size());
  for (size_t i = 0; i < archive.members_.size(); ++i)
    archive.by_name_.emplace(archive.members_[i].name, i);
  archive.source_ = std::move(source);
  archive.limits_ = limits;
  return archive;
}

const ZipMember* ZipArchive::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &members_[it->second];
}

std::shared_ptr<ByteSource> ZipArchive::member_source(const ZipMember& member) const {
  std::string name = fmt::format("{}:{}", source_->name(), member.name);
  auto raw = make_slice_source(source_, member.data_offset, member.compressed_size, name);
  if (member.method == 0) return raw;
  auto fail = [&](std::string message) {
    throw Error(ErrorCode::limit_exceeded,
                fmt::format("zip member '{}': {}", member.name, std::move(message)),
                {.source = source_->name(), .offset = member.data_offset});
  };
  if (member.uncompressed_size > limits_.max_inflated_bytes)
    fail(limit_message("inflated size", member.uncompressed_size, "max_inflated_bytes",
                       limits_.max_inflated_bytes));
  const double ratio = static_cast<double>(member.uncompressed_size) /
                       static_cast<double>(std::max<uint64_t>(member.compressed_size, 1));
  if (ratio > limits_.max_inflate_ratio)
    fail(fmt::format(
        "inflate ratio {:.0f} exceeds the max_inflate_ratio limit of {} ({} bytes "
        "from {})",
        ratio, limits_.max_inflate_ratio, member.uncompressed_size, member.compressed_size));
  return make_inflated_source(std::move(raw), member, std::move(name), source_->name());
}

bool looks_like_zip(std::span<const std::byte> head) {
  if (head.size() < 4) return false;
  const uint32_t sig = Fields{head}.u32(0);
  return sig == kLocalSig || sig == kEocdSig;
}

std::string_view first_zip_member_name(std::span<const std::byte> head) {
  constexpr size_t kLocalHeader = 30;
  if (head.size() < kLocalHeader || Fields{head}.u32(0) != kLocalSig) return {};
  const size_t name_length = Fields{head}.u16(26);
  if (head.size() - kLocalHeader < name_length) return {};
  return {reinterpret_cast<const char*>(head.data() + kLocalHeader), name_length};
}

}  // namespace ballast
