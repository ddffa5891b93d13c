// GgufCursor: a forward reader over the header of a GGUF file (little-endian scalars and
// length-prefixed strings), used by the GGUF parser and its metadata reader.
//
// The header is fetched from the ByteSource in growing chunks, so a remote file costs a few
// ranged reads. Every read is bounded: past the end of the source it throws
// Error(invalid_format, "truncated: need N bytes at offset X, file has S"); past
// `max_header_bytes` it throws Error(limit_exceeded). Not thread-safe (one parse, one cursor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ballast/byte_source.hpp"
#include "ballast/error.hpp"
#include "ballast/limits.hpp"

namespace ballast {

class GgufCursor {
 public:
  GgufCursor(const ByteSource& source, const Limits& limits);

  uint64_t offset() const { return offset_; }
  uint64_t source_size() const { return size_; }
  const std::string& source_name() const { return source_.name(); }
  const Limits& limits() const { return limits_; }

  uint8_t u8() { return static_cast<uint8_t>(le(1)); }
  uint16_t u16() { return static_cast<uint16_t>(le(2)); }
  uint32_t u32() { return static_cast<uint32_t>(le(4)); }
  uint64_t u64() { return le(8); }
  // A GGUF string: u64 byte length (at most max_string_length), then the bytes.
  std::string string(std::string_view what);
  // A string that names something (a metadata key, a tensor): it must be UTF-8, as gguf-py's
  // GGUFReader, which refuses a file with any other name, decodes it.
  std::string name(std::string_view what);
  // Makes sure the next `n` bytes are readable (so a count can be checked before a loop).
  void require(uint64_t n);

  [[noreturn]] void fail(ErrorCode code, std::string message, uint64_t at,
                         std::string tensor = {}) const;

 private:
  uint64_t le(unsigned bytes);

  const ByteSource& source_;
  Limits limits_;
  uint64_t size_;
  uint64_t offset_ = 0;
  std::vector<std::byte> buffer_;  // bytes [0, buffer_.size()) of the source
};

}  // namespace ballast
