// Bounded, chunked reading of a GGUF header (see gguf_cursor.hpp).
#include "formats/gguf/gguf_cursor.hpp"

#include <fmt/format.h>
#include <algorithm>

#include "util/checked.hpp"
#include "util/error_text.hpp"
#include "util/utf8.hpp"

namespace ballast {
namespace {

constexpr uint64_t kFirstChunk = 64 * 1024;

}  // namespace

GgufCursor::GgufCursor(const ByteSource& source, const Limits& limits)
    : source_(source), limits_(limits), size_(source.size()) {}

void GgufCursor::fail(ErrorCode code, std::string message, uint64_t at, std::string tensor) const {
  ErrorContext context;
  context.source = source_.name();
  context.tensor = std::move(tensor);
  context.offset = at;
  throw Error(code, std::move(message), std::move(context));
}

void GgufCursor::require(uint64_t n) {
  auto end = checked_add(offset_, n);
  if (!end || *end > size_) fail(ErrorCode::invalid_format, truncated_message(end, size_), offset_);
  if (*end > limits_.max_header_bytes)
    fail(ErrorCode::limit_exceeded,
         limit_message("GGUF header size", std::nullopt, "max_header_bytes",
                       limits_.max_header_bytes),
         offset_);
  if (*end <= buffer_.size()) return;
  // Grow geometrically, but never past the file or the header limit.
  const uint64_t cap = std::min(size_, limits_.max_header_bytes);
  const uint64_t grown = std::max<uint64_t>(kFirstChunk, 2 * buffer_.size());
  const uint64_t target = std::min(cap, std::max(*end, grown));
  const uint64_t old = buffer_.size();
  buffer_.resize(static_cast<size_t>(target));
  source_.read_at(old, std::span(buffer_).subspan(static_cast<size_t>(old)));
}

uint64_t GgufCursor::le(unsigned bytes) {
  require(bytes);
  uint64_t v = 0;
  for (unsigned i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(buffer_[static_cast<size_t>(offset_) + i]) << (8 * i);
  offset_ += bytes;
  return v;
}

std::string GgufCursor::string(std::string_view what) {
  const uint64_t at = offset_;
  const uint64_t n = u64();
  if (n > limits_.max_string_length)
    fail(ErrorCode::limit_exceeded,
         limit_message(fmt::format("{} length", what), n, "max_string_length",
                       limits_.max_string_length),
         at);
  require(n);
  const char* p = reinterpret_cast<const char*>(buffer_.data()) + offset_;
  offset_ += n;
  return std::string(p, static_cast<size_t>(n));
}

std::string GgufCursor::name(std::string_view what) {
  const uint64_t at = offset_;
  std::string text = string(what);
  if (!is_valid_utf8(text))
    fail(ErrorCode::invalid_format, fmt::format("{} is not valid UTF-8", what), at);
  return text;
}

}  // namespace ballast
