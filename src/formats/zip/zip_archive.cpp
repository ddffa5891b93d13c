// Zip central-directory reader (see zip_archive.hpp). Every size and offset comes from the
// central directory (ZIP64 fields where present); each local header must repeat what the
// directory says, and the members must tile the file up to the directory, so that readers
// that trust either, or correct offsets as Python's zipfile does, read the same bytes.
#include "formats/zip/zip_archive.hpp"

#include <algorithm>
#include <array>
#include <unordered_set>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "formats/zip/inflated_source.hpp"
#include "formats/zip/zip_end_records.hpp"
#include "formats/zip/zip_fields.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"
#include "util/utf8.hpp"

namespace ballast {
namespace {

using namespace zip;

constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kUnicodePathExtraId = 0x7075;
constexpr uint16_t kFlagEncrypted = 0x0001;
constexpr uint16_t kFlagDescriptor = 0x0008;
constexpr uint16_t kFlagPatched = 0x0020;
constexpr uint16_t kFlagStrongEncryption = 0x0040;
constexpr uint16_t kFlagUtf8Name = 0x0800;
constexpr uint16_t kFlagMaskedDirectory = 0x2000;

// A central directory entry with what is needed to check its local header and the layout.
struct Entry {
  ZipMember member;
  uint16_t flags = 0;
  uint64_t header_offset = 0;
  uint64_t end = 0;  // one past the member's data and data descriptor
};

// The extra fields of a header: every field must lie inside, and none may rename the member.
struct Extras {
  std::span<const std::byte> zip64;  // the ZIP64 field's data; empty when there is none
  bool has_zip64 = false;
};

class Reader {
 public:
  Reader(const ByteSource& source, const Limits& limits) : source_(source), limits_(limits) {}

  std::vector<ZipMember> read() {
    const CentralDirectory dir = locate_central_directory(source_, limits_);
    std::vector<std::byte> cd = source_.read(dir.offset, dir.size);
    std::vector<Entry> entries;
    std::unordered_set<std::string, StringHash, CountedEqual> names;
    uint64_t at = 0;
    for (uint64_t i = 0; i < dir.entries; ++i) {
      count_op();
      Entry e = central_entry(cd, dir.offset, at);
      if (!names.insert(e.member.name).second)
        fail(ErrorCode::invalid_format, fmt::format("duplicate member name '{}'", e.member.name),
             e.header_offset);
      read_local_header(e);
      entries.push_back(std::move(e));
    }
    // Python's zipfile reads entries until the directory's size is used up, miniz by count.
    if (at != cd.size())
      fail(ErrorCode::invalid_format,
           fmt::format("the central directory holds {} bytes after its {} stated entries",
                       cd.size() - at, dir.entries),
           dir.offset + at);
    check_layout(entries, dir.offset);
    std::vector<ZipMember> members;
    members.reserve(entries.size());
    for (Entry& e : entries) members.push_back(std::move(e.member));
    return members;
  }

 private:
  [[noreturn]] void fail(ErrorCode code, std::string message, uint64_t offset) const {
    throw Error(code, std::move(message), {.source = source_.name(), .offset = offset});
  }

  Entry central_entry(std::span<const std::byte> cd, uint64_t cd_offset, uint64_t& at) const {
    const uint64_t entry_offset = cd_offset + at;
    if (!range_inside(at, kCentralBytes, cd.size()))
      fail(ErrorCode::invalid_format, "central directory entry runs past the directory",
           entry_offset);
    Fields f{cd.subspan(at)};
    if (f.u32(0) != kCentralSig)
      fail(ErrorCode::invalid_format, "bad central directory entry signature", entry_offset);
    const uint64_t name_len = f.u16(28), extra_len = f.u16(30), comment_len = f.u16(32);
    const uint64_t var_len = name_len + extra_len + comment_len;
    if (!range_inside(at + kCentralBytes, var_len, cd.size()))
      fail(ErrorCode::invalid_format, "central directory entry runs past the directory",
           entry_offset);
    Entry e;
    ZipMember& m = e.member;
    m.name.assign(reinterpret_cast<const char*>(cd.data() + at + kCentralBytes), name_len);
    e.flags = f.u16(8);
    m.method = f.u16(10);
    m.crc32 = f.u32(16);
    m.compressed_size = f.u32(20);
    m.uncompressed_size = f.u32(24);
    e.header_offset = f.u32(42);
    const uint16_t start_disk = f.u16(34);
    const Extras extras =
        parse_extras(cd.subspan(at + kCentralBytes + name_len, extra_len), m.name, entry_offset);
    apply_zip64(m, &e.header_offset, extras, entry_offset);
    check_name(m.name, e.flags, entry_offset);
    if ((e.flags & (kFlagEncrypted | kFlagStrongEncryption | kFlagMaskedDirectory)) != 0 ||
        m.method == 99)
      fail(ErrorCode::unsupported, fmt::format("member '{}' is encrypted", m.name), entry_offset);
    if ((e.flags & kFlagPatched) != 0)
      fail(ErrorCode::unsupported, fmt::format("member '{}' holds patch data", m.name),
           entry_offset);
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
    if (start_disk != 0 && start_disk != kSaturated16)
      fail(ErrorCode::unsupported, "multi-volume zip archives are not supported", entry_offset);
    at += kCentralBytes + var_len;
    return e;
  }

  Extras parse_extras(std::span<const std::byte> extra, const std::string& name,
                      uint64_t offset) const {
    Extras extras;
    Fields f{extra};
    uint64_t at = 0;
    while (at < extra.size()) {
      if (extra.size() - at < 4 || !range_inside(at + 4, f.u16(at + 2), extra.size()))
        fail(ErrorCode::invalid_format,
             fmt::format("member '{}' has an extra field running past its extra data", name),
             offset);
      const uint16_t id = f.u16(at);
      const uint64_t len = f.u16(at + 2);
      if (id == kUnicodePathExtraId)
        fail(ErrorCode::invalid_format,
             fmt::format("member '{}' carries a second name (a Unicode path extra field) that "
                         "readers apply differently",
                         name),
             offset);
      if (id == kZip64ExtraId) {
        if (extras.has_zip64)
          fail(ErrorCode::invalid_format,
               fmt::format("member '{}' has two ZIP64 extra fields", name), offset);
        extras.has_zip64 = true;
        extras.zip64 = extra.subspan(at + 4, len);
      }
      at += 4 + len;
    }
    return extras;
  }

  // The ZIP64 extra field holds, in order, only the fields whose 32-bit value is saturated.
  void apply_zip64(ZipMember& m, uint64_t* header_offset, const Extras& extras,
                   uint64_t offset) const {
    const bool need_uncompressed = m.uncompressed_size == kSaturated32;
    const bool need_compressed = m.compressed_size == kSaturated32;
    const bool need_offset = header_offset && *header_offset == kSaturated32;
    if (!need_uncompressed && !need_compressed && !need_offset) return;
    if (!extras.has_zip64)
      fail(ErrorCode::invalid_format,
           fmt::format("member '{}' has saturated 32-bit fields but no ZIP64 extra field", m.name),
           offset);
    Fields z{extras.zip64};
    uint64_t pos = 0;
    auto next = [&](uint64_t& value) {
      if (pos + 8 > extras.zip64.size())
        fail(ErrorCode::invalid_format, "ZIP64 extra field is too short", offset);
      value = z.u64(pos);
      pos += 8;
    };
    if (need_uncompressed) next(m.uncompressed_size);
    if (need_compressed) next(m.compressed_size);
    if (need_offset) next(*header_offset);
  }

  // Python decodes a name as UTF-8 when flag 11 says so and as cp437 otherwise; only names
  // that read the same as bytes and as text are accepted.
  void check_name(const std::string& name, uint16_t flags, uint64_t entry_offset) const {
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
    if ((flags & kFlagUtf8Name) != 0) {
      if (!is_valid_utf8(name)) refuse("it is flagged UTF-8 but is not");
    } else if (std::any_of(name.begin(), name.end(),
                           [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
      refuse("it is not ASCII and not flagged UTF-8 (readers would decode it as cp437)");
    }
  }

  // The local header must repeat the central directory's name, flags, method, CRC and sizes
  // (zeros stand for the CRC and sizes when a data descriptor follows the data, which must
  // then repeat them too); data starts after its own name and extra field.
  void read_local_header(Entry& e) const {
    const ZipMember& m = e.member;
    const uint64_t size = source_.size();
    const uint64_t at = e.header_offset;
    const std::string what = fmt::format("local header of '{}'", m.name);
    if (!range_inside(at, kLocalBytes, size))
      fail(ErrorCode::invalid_format, truncated_message(checked_add(at, kLocalBytes), size, what),
           at);
    std::vector<std::byte> header = source_.read(at, kLocalBytes);
    Fields f{header};
    if (f.u32(0) != kLocalSig)
      fail(ErrorCode::invalid_format, fmt::format("bad local header signature for '{}'", m.name),
           at);
    const uint64_t name_len = f.u16(26), extra_len = f.u16(28);
    const uint64_t name_offset = at + kLocalBytes;
    if (!range_inside(name_offset, name_len + extra_len, size))
      fail(ErrorCode::invalid_format,
           truncated_message(checked_add(name_offset, name_len + extra_len), size, what), at);
    std::vector<std::byte> local = source_.read(name_offset, name_len + extra_len);
    if (std::string_view(reinterpret_cast<const char*>(local.data()), name_len) != m.name)
      fail(ErrorCode::invalid_format,
           fmt::format("local header name differs from the central directory's '{}'", m.name), at);
    auto differs = [&](std::string_view field, uint64_t local_value, uint64_t central) {
      fail(ErrorCode::invalid_format,
           fmt::format("{} says {} {} but the central directory says {}", what, field, local_value,
                       central),
           at);
    };
    if (f.u16(6) != e.flags) differs("flags", f.u16(6), e.flags);
    if (f.u16(8) != m.method) differs("method", f.u16(8), m.method);
    const Extras extras = parse_extras(std::span(local).subspan(name_len), m.name, at);
    ZipMember stated;
    stated.name = m.name;
    stated.crc32 = f.u32(14);
    stated.compressed_size = f.u32(18);
    stated.uncompressed_size = f.u32(22);
    apply_zip64(stated, nullptr, extras, at);
    const bool descriptor = (e.flags & kFlagDescriptor) != 0;
    auto check = [&](std::string_view field, uint64_t local_value, uint64_t central) {
      if (local_value != central && !(descriptor && local_value == 0))
        differs(field, local_value, central);
    };
    check("CRC-32", stated.crc32, m.crc32);
    check("compressed size", stated.compressed_size, m.compressed_size);
    check("uncompressed size", stated.uncompressed_size, m.uncompressed_size);
    const uint64_t data = name_offset + name_len + extra_len;
    if (!range_inside(data, m.compressed_size, size))
      fail(ErrorCode::invalid_format,
           truncated_message(checked_add(data, m.compressed_size), size,
                             fmt::format("data of '{}'", m.name)),
           data);
    e.member.data_offset = data;
    e.end = data + m.compressed_size;
    if (descriptor) e.end += descriptor_length(m, e.end, extras.has_zip64);
  }

  // A data descriptor: an optional signature, the CRC-32 and both sizes, which must repeat the
  // central directory's. The sizes are 64-bit when the local header has a ZIP64 field, though
  // writers differ, so the other width is accepted too when its values are the directory's (the
  // layout check then proves where the descriptor ends).
  uint64_t descriptor_length(const ZipMember& m, uint64_t at, bool wide) const {
    const uint64_t available = std::min<uint64_t>(source_.size() - at, 24);
    std::vector<std::byte> bytes = source_.read(at, available);
    Fields f{bytes};
    const uint64_t sig = available >= 4 && f.u32(0) == kDescriptorSig ? 4 : 0;
    auto matches = [&](bool wide_sizes) {
      if (sig + (wide_sizes ? 20 : 12) > available) return false;
      const uint64_t compressed = wide_sizes ? f.u64(sig + 4) : f.u32(sig + 4);
      const uint64_t uncompressed = wide_sizes ? f.u64(sig + 12) : f.u32(sig + 8);
      return f.u32(sig) == m.crc32 && compressed == m.compressed_size &&
             uncompressed == m.uncompressed_size;
    };
    if (matches(wide)) return sig + (wide ? 20 : 12);
    if (matches(!wide)) return sig + (wide ? 12 : 20);
    fail(ErrorCode::invalid_format,
         fmt::format("data descriptor of '{}' is missing or disagrees with the central directory "
                     "(CRC-32 {:#x}, sizes {} and {})",
                     m.name, m.crc32, m.compressed_size, m.uncompressed_size),
         at);
  }

  // Members (local header through data descriptor) tile the file from its first byte to the
  // central directory: nothing before them, between them or shared, so that a reader walking
  // local headers, one taking the directory's offsets and one correcting them all see the
  // same members.
  void check_layout(const std::vector<Entry>& entries, uint64_t cd_offset) const {
    std::vector<const Entry*> order;
    order.reserve(entries.size());
    for (const Entry& e : entries) order.push_back(&e);
    std::sort(order.begin(), order.end(),
              [](const Entry* a, const Entry* b) { return a->header_offset < b->header_offset; });
    uint64_t expected = 0;
    for (const Entry* e : order) {
      if (e->header_offset < expected)
        fail(ErrorCode::invalid_format,
             fmt::format("member '{}' overlaps the member before it", e->member.name),
             e->header_offset);
      if (e->header_offset > expected)
        fail(ErrorCode::invalid_format,
             fmt::format("{} bytes before member '{}' belong to no member",
                         e->header_offset - expected, e->member.name),
             expected);
      expected = e->end;
    }
    if (expected > cd_offset)
      fail(ErrorCode::invalid_format,
           fmt::format("the last member ends at {}, inside the central directory at {}", expected,
                       cd_offset),
           cd_offset);
    if (expected < cd_offset)
      fail(ErrorCode::invalid_format,
           fmt::format("{} bytes before the central directory belong to no member",
                       cd_offset - expected),
           expected);
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
  const uint32_t sig = zip::Fields{head}.u32(0);
  return sig == zip::kLocalSig || sig == zip::kEocdSig;
}

std::string_view first_zip_member_name(std::span<const std::byte> head) {
  constexpr size_t kLocalHeader = 30;
  if (head.size() < kLocalHeader || zip::Fields{head}.u32(0) != zip::kLocalSig) return {};
  const size_t name_length = zip::Fields{head}.u16(26);
  if (head.size() - kLocalHeader < name_length) return {};
  return {reinterpret_cast<const char*>(head.data() + kLocalHeader), name_length};
}

}  // namespace ballast
