// The zip format's record signatures and sizes, and little-endian field access, shared by the
// end-record locator and the archive reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ballast::zip {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kDescriptorSig = 0x08074b50;
constexpr uint32_t kEocdSig = 0x06054b50;
constexpr uint32_t kZip64EocdSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kEocdBytes = 22;
constexpr uint64_t kZip64EocdBytes = 56;
constexpr uint64_t kZip64LocatorBytes = 20;
constexpr uint64_t kCentralBytes = 46;
constexpr uint64_t kLocalBytes = 30;
constexpr uint64_t kMaxComment = 0xffff;
constexpr uint16_t kSaturated16 = 0xffff;
constexpr uint32_t kSaturated32 = 0xffffffff;

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

}  // namespace ballast::zip
