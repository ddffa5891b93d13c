// A small, bounded reader of the protobuf wire format, for ONNX models.
//
// Why hand-written and not libprotobuf:
//  (a) zero copy: a tensor's raw_data stays where it is in the (mapped) model file and becomes a
//      slice of the model's ByteSource; libprotobuf would copy every payload into a std::string;
//  (b) size: libprotobuf refuses messages over 2 GiB, and real models with inline weights pass
//      that;
//  (c) memory: the model is never copied whole into memory. Fields are read in place from the
//      ByteSource's mapping, or through a small cache of chunks when the source does not map, and
//      payloads the parser does not need (raw_data, doc strings) are skipped, never read.
//
// Bounds: a varint has at most 10 bytes, a field number fits 29 bits, every length-delimited
// payload lies inside its parent message, and groups (unused by ONNX) are refused. Every failure
// is an Error(invalid_format) naming the source and the byte offset. Callers bound counts,
// string lengths and nesting depth. A WireInput belongs to one parse: it is not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ballast/byte_source.hpp"

namespace ballast {

// The bytes of one ByteSource, read from its mapping or in bounded chunks.
class WireInput {
 public:
  explicit WireInput(std::shared_ptr<ByteSource> source);

  uint64_t size() const { return size_; }
  const std::shared_ptr<ByteSource>& source() const { return source_; }
  const std::string& name() const { return source_->name(); }

  // Up to `n` (at most kChunkBytes) bytes at `offset`, fewer only at the end of the source.
  // The view stays valid until the next call.
  std::span<const std::byte> peek(uint64_t offset, size_t n);
  // Copies exactly `out.size()` bytes at `offset`.
  void copy(uint64_t offset, std::span<std::byte> out);

  [[noreturn]] void fail(std::string message, uint64_t offset) const;

  static constexpr size_t kChunkBytes = 64 * 1024;

 private:
  std::shared_ptr<ByteSource> source_;
  std::shared_ptr<const MappedRegion> map_;
  uint64_t size_;
  std::vector<std::byte> chunk_;
  uint64_t chunk_offset_ = 0;
};

enum class WireType : uint8_t { varint = 0, fixed64 = 1, len = 2, fixed32 = 5 };

// A byte range [offset, offset + length) of the input, e.g. one message.
struct WireSpan {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t end() const { return offset + length; }
};

struct WireField {
  uint32_t number = 0;
  WireType type = WireType::varint;
  uint64_t value = 0;   // the varint or fixed value; the payload length for `len`
  uint64_t offset = 0;  // where the value (or the payload, for `len`) starts
  WireSpan payload() const { return {offset, value}; }
};

// Reads one varint at `pos` (advanced past it); it must end before `end`.
uint64_t read_varint(WireInput& in, uint64_t& pos, uint64_t end);

// Iterates the fields of one message; skipping a field costs nothing.
class MessageReader {
 public:
  MessageReader(WireInput& in, WireSpan span) : in_(in), pos_(span.offset), end_(span.end()) {}
  // The next field, or false at the end of the message.
  bool next(WireField& field);

 private:
  WireInput& in_;
  uint64_t pos_;
  uint64_t end_;
};

// Field checks and readers shared by the ONNX message walkers. `what` names the field in
// messages ("TensorProto.dims").
void expect_wire_type(const WireInput& in, const WireField& field, WireType type,
                      std::string_view what);
// A length-delimited field as text, refused (limit_exceeded) above `max_length` bytes.
std::string read_wire_string(WireInput& in, const WireField& field, uint64_t max_length,
                             std::string_view what);
// The values of a repeated varint field, packed (one `len` field) or not (one varint each).
// Calls `sink(value)` for each.
template <typename Sink>
void for_each_varint(WireInput& in, const WireField& field, std::string_view what, Sink&& sink) {
  if (field.type == WireType::varint) {
    sink(field.value);
    return;
  }
  expect_wire_type(in, field, WireType::len, what);
  uint64_t pos = field.offset;
  while (pos < field.payload().end()) sink(read_varint(in, pos, field.payload().end()));
}
// Appends the little-endian bytes of a repeated fixed-width field (4 or 8 bytes a value),
// packed or not, to `out`.
void append_fixed(WireInput& in, const WireField& field, uint32_t width, std::string_view what,
                  std::vector<std::byte>& out);

}  // namespace ballast
