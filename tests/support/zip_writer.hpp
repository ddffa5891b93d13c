// A byte-exact zip writer for tests of the zip reader, .npz and torch zips: stored or deflated
// members, data descriptors (local header sizes and CRC zero), ZIP64 records and extra fields
// even for small archives, and hooks to lie about CRCs and sizes. Header-only, test use only.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ballast::test {

struct ZipEntrySpec {
  std::string name;
  std::string data;
  bool deflate = false;
  bool descriptor = false;                    // sizes and CRC in a data descriptor
  std::optional<uint32_t> crc;                // lie about the CRC
  std::optional<uint64_t> uncompressed_size;  // lie about the inflated size
  uint16_t flags = 0;                         // extra general-purpose flags (1 = encrypted)
  std::optional<uint16_t> method;             // override the method field
};

struct BuiltZip {
  std::string bytes;
  std::vector<uint64_t> local_offsets;
  uint64_t cd_offset = 0;
  uint64_t eocd_offset = 0;
};

inline std::string raw_deflate(const std::string& data) {
  z_stream s{};
  if (deflateInit2(&s, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  std::string out(deflateBound(&s, data.size()), '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s.avail_in = static_cast<uInt>(data.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  if (deflate(&s, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

class ZipWriter {
 public:
  static BuiltZip build(const std::vector<ZipEntrySpec>& entries, bool zip64 = false) {
    BuiltZip zip;
    std::string cd;
    for (const auto& e : entries) {
      const std::string payload = e.deflate ? raw_deflate(e.data) : e.data;
      const uint32_t crc = e.crc.value_or(static_cast<uint32_t>(crc32(
          0, reinterpret_cast<const Bytef*>(e.data.data()), static_cast<uInt>(e.data.size()))));
      const uint64_t usize = e.uncompressed_size.value_or(e.data.size());
      const uint16_t method = e.method.value_or(e.deflate ? 8 : 0);
      const uint16_t flags = static_cast<uint16_t>(e.flags | (e.descriptor ? 8 : 0));
      const uint64_t offset = zip.bytes.size();
      zip.local_offsets.push_back(offset);
      std::string& b = zip.bytes;
      u32(b, 0x04034b50), u16(b, 20), u16(b, flags), u16(b, method), u32(b, 0);
      u32(b, e.descriptor ? 0 : crc);
      u32(b, e.descriptor ? 0 : static_cast<uint32_t>(payload.size()));
      u32(b, e.descriptor ? 0 : static_cast<uint32_t>(usize));
      u16(b, static_cast<uint16_t>(e.name.size())), u16(b, 0);
      b += e.name;
      b += payload;
      if (e.descriptor) {
        u32(b, 0x08074b50), u32(b, crc), u32(b, static_cast<uint32_t>(payload.size()));
        u32(b, static_cast<uint32_t>(usize));
      }
      u32(cd, 0x02014b50), u16(cd, 20), u16(cd, zip64 ? 45 : 20), u16(cd, flags), u16(cd, method);
      u32(cd, 0), u32(cd, crc);
      u32(cd, zip64 ? 0xffffffff : static_cast<uint32_t>(payload.size()));
      u32(cd, zip64 ? 0xffffffff : static_cast<uint32_t>(usize));
      u16(cd, static_cast<uint16_t>(e.name.size())), u16(cd, zip64 ? 28 : 0), u16(cd, 0);
      u16(cd, 0), u16(cd, 0), u32(cd, 0),
          u32(cd, zip64 ? 0xffffffff : static_cast<uint32_t>(offset));
      cd += e.name;
      if (zip64) u16(cd, 1), u16(cd, 24), u64(cd, usize), u64(cd, payload.size()), u64(cd, offset);
    }
    zip.cd_offset = zip.bytes.size();
    zip.bytes += cd;
    std::string& b = zip.bytes;
    if (zip64) {
      const uint64_t record = b.size();
      u32(b, 0x06064b50), u64(b, 44), u16(b, 45), u16(b, 45), u32(b, 0), u32(b, 0);
      u64(b, entries.size()), u64(b, entries.size()), u64(b, cd.size()), u64(b, zip.cd_offset);
      u32(b, 0x07064b50), u32(b, 0), u64(b, record), u32(b, 1);
    }
    zip.eocd_offset = b.size();
    u32(b, 0x06054b50), u16(b, 0), u16(b, 0);
    u16(b, zip64 ? 0xffff : static_cast<uint16_t>(entries.size()));
    u16(b, zip64 ? 0xffff : static_cast<uint16_t>(entries.size()));
    u32(b, zip64 ? 0xffffffff : static_cast<uint32_t>(cd.size()));
    u32(b, zip64 ? 0xffffffff : static_cast<uint32_t>(zip.cd_offset));
    u16(b, 0);
    return zip;
  }

  static void put_u16(std::string& b, uint64_t at, uint16_t v) {
    for (int i = 0; i < 2; ++i) b[at + i] = static_cast<char>(v >> (8 * i));
  }
  static void put_u32(std::string& b, uint64_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<char>(v >> (8 * i));
  }

 private:
  static int u16(std::string& b, uint16_t v) {
    b += static_cast<char>(v & 0xff);
    b += static_cast<char>(v >> 8);
    return 0;
  }
  static int u32(std::string& b, uint32_t v) { return u16(b, v & 0xffff), u16(b, v >> 16); }
  static int u64(std::string& b, uint64_t v) {
    return u32(b, static_cast<uint32_t>(v)), u32(b, static_cast<uint32_t>(v >> 32));
  }
};

}  // namespace ballast::test
