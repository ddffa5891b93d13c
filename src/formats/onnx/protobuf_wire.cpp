// The bounded protobuf wire-format reader (see protobuf_wire.hpp).
#include "formats/onnx/protobuf_wire.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"
#include "util/op_count.hpp"

namespace ballast {
namespace {

constexpr uint32_t kMaxVarintBytes = 10;
constexpr uint64_t kMaxFieldNumber = (1U << 29) - 1;

std::string_view wire_type_name(WireType type) {
  switch (type) {
    case WireType::varint: return "varint";
    case WireType::fixed64: return "fixed64";
    case WireType::len: return "length-delimited";
    case WireType::fixed32: return "fixed32";
  }
  return "unknown";
}

}  // namespace

WireInput::WireInput(std::shared_ptr<ByteSource> source)
    : source_(std::move(source)), map_(source_->mapping()), size_(source_->size()) {}

std::span<const std::byte> WireInput::peek(uint64_t offset, size_t n) {
  if (offset >= size_) return {};
  const size_t available = static_cast<size_t>(std::min<uint64_t>(n, size_ - offset));
  if (map_) return {map_->data() + offset, available};
  const bool cached = offset >= chunk_offset_ && offset - chunk_offset_ <= chunk_.size() &&
                      available <= chunk_.size() - (offset - chunk_offset_);
  if (!cached) {
    chunk_.resize(static_cast<size_t>(std::min<uint64_t>(kChunkBytes, size_ - offset)));
    source_->read_at(offset, chunk_);
    chunk_offset_ = offset;
  }
  return {chunk_.data() + (offset - chunk_offset_), available};
}

void WireInput::copy(uint64_t offset, std::span<std::byte> out) {
  if (!range_inside(offset, out.size(), size_))
    fail(truncated_message(checked_add(offset, out.size()), size_), offset);
  if (out.empty()) return;
  if (map_) {
    std::memcpy(out.data(), map_->data() + offset, out.size());
    return;
  }
  source_->read_at(offset, out);
}

void WireInput::fail(std::string message, uint64_t offset) const {
  throw Error(ErrorCode::invalid_format, std::move(message),
              {.source = source_->name(), .offset = offset});
}

uint64_t read_varint(WireInput& in, uint64_t& pos, uint64_t end) {
  const uint64_t start = pos;
  auto bytes = in.peek(pos, static_cast<size_t>(std::min<uint64_t>(kMaxVarintBytes, end - pos)));
  uint64_t value = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    if (i == kMaxVarintBytes - 1 && b > 1) in.fail("varint overflows 64 bits", start);
    value |= static_cast<uint64_t>(b & 0x7F) << (7 * i);
    if ((b & 0x80) == 0) {
      pos += i + 1;
      return value;
    }
  }
  if (bytes.size() == kMaxVarintBytes) in.fail("varint is longer than 10 bytes", start);
  in.fail("varint is cut off by the end of its message", start);
}

bool MessageReader::next(WireField& field) {
  if (pos_ >= end_) return false;
  count_op();  // every field read, at every level: a re-scan shows in parser_scaling_test
  const uint64_t tag_offset = pos_;
  const uint64_t tag = read_varint(in_, pos_, end_);
  const uint64_t number = tag >> 3;
  if (number == 0 || number > kMaxFieldNumber)
    in_.fail(fmt::format("invalid protobuf field number {}", number), tag_offset);
  field.number = static_cast<uint32_t>(number);
  switch (tag & 7) {
    case 0:
      field.type = WireType::varint;
      field.offset = pos_;
      field.value = read_varint(in_, pos_, end_);
      return true;
    case 1:
    case 5: {
      const uint32_t width = (tag & 7) == 1 ? 8 : 4;
      field.type = width == 8 ? WireType::fixed64 : WireType::fixed32;
      field.offset = pos_;
      if (end_ - pos_ < width)
        in_.fail(end_ == in_.size()
                     ? truncated_message(pos_ + width, in_.size(), fmt::format("field {}", number))
                     : fmt::format("field {} is cut off by the end of its message", number),
                 pos_);
      std::byte raw[8] = {};
      in_.copy(pos_, std::span(raw, width));
      uint64_t value = 0;
      for (uint32_t i = 0; i < width; ++i) value |= static_cast<uint64_t>(raw[i]) << (8 * i);
      field.value = value;
      pos_ += width;
      return true;
    }
    case 2: {
      const uint64_t length_offset = pos_;
      field.type = WireType::len;
      field.value = read_varint(in_, pos_, end_);
      field.offset = pos_;
      if (field.value > end_ - pos_)
        in_.fail(end_ == in_.size()  // the message runs to the end of the file
                     ? truncated_message(checked_add(pos_, field.value), in_.size(),
                                         fmt::format("field {}", number))
                     : fmt::format("field {} claims {} bytes but its message has {} left", number,
                                   field.value, end_ - pos_),
                 length_offset);
      pos_ += field.value;
      return true;
    }
    case 3:
    case 4: in_.fail("protobuf groups are not used by ONNX", tag_offset);
    default: in_.fail(fmt::format("invalid protobuf wire type {}", tag & 7), tag_offset);
  }
}

void expect_wire_type(const WireInput& in, const WireField& field, WireType type,
                      std::string_view what) {
  if (field.type != type)
    in.fail(fmt::format("{} has wire type {}, expected {}", what, wire_type_name(field.type),
                        wire_type_name(type)),
            field.offset);
}

std::string read_wire_string(WireInput& in, const WireField& field, uint64_t max_length,
                             std::string_view what) {
  expect_wire_type(in, field, WireType::len, what);
  if (field.value > max_length)
    throw Error(
        ErrorCode::limit_exceeded,
        limit_message(fmt::format("{} length", what), field.value, "max_string_length", max_length),
        {.source = in.name(), .offset = field.offset});
  std::string text(static_cast<size_t>(field.value), '\0');
  in.copy(field.offset, std::as_writable_bytes(std::span(text)));
  return text;
}

void append_fixed(WireInput& in, const WireField& field, uint32_t width, std::string_view what,
                  std::vector<std::byte>& out) {
  const WireType single = width == 8 ? WireType::fixed64 : WireType::fixed32;
  if (field.type == single) {
    for (uint32_t i = 0; i < width; ++i)
      out.push_back(static_cast<std::byte>((field.value >> (8 * i)) & 0xFF));
    return;
  }
  expect_wire_type(in, field, WireType::len, what);
  if (field.value % width != 0)
    in.fail(fmt::format("packed {} of {} bytes is not a whole number of {}-byte values", what,
                        field.value, width),
            field.offset);
  const size_t old_size = out.size();
  out.resize(old_size + static_cast<size_t>(field.value));
  in.copy(field.offset, std::span(out).subspan(old_size));
}

}  // namespace ballast
