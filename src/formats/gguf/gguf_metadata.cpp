// GGUF KV pairs to JSON text (format in gguf_metadata.hpp).
#include "formats/gguf/gguf_metadata.hpp"

#include <bit>
#include <iterator>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/checked.hpp"
#include "util/json_text.hpp"
#include "util/op_count.hpp"

namespace ballast {
namespace {

// Bytes of one element of a fixed-size value type; 0 for string and array.
uint64_t fixed_size(uint32_t type) {
  switch (static_cast<GgufValueType>(type)) {
    case GgufValueType::u8:
    case GgufValueType::i8:
    case GgufValueType::boolean: return 1;
    case GgufValueType::u16:
    case GgufValueType::i16: return 2;
    case GgufValueType::u32:
    case GgufValueType::i32:
    case GgufValueType::f32: return 4;
    case GgufValueType::u64:
    case GgufValueType::i64:
    case GgufValueType::f64: return 8;
    default: return 0;
  }
}

template <typename Int>
void write_integer(std::string& out, Int v, GgufKv* scalar) {
  fmt::format_to(std::back_inserter(out), "{}", v);
  if (scalar && (std::is_signed_v<Int> || static_cast<uint64_t>(v) <= INT64_MAX))
    scalar->integer = static_cast<int64_t>(v);
}

// A double as nlohmann::json writes it (shortest round trip, "1.0" for whole numbers, null
// for NaN and infinities), so the text reads back as the same number.
void write_double(std::string& out, double v) { out += nlohmann::json(v).dump(); }

}  // namespace

GgufMetadataReader::GgufMetadataReader(GgufCursor& cursor, uint64_t n_kv, std::string& json)
    : cursor_(cursor), json_(json) {
  charge(n_kv, cursor.offset());
}

void GgufMetadataReader::charge(uint64_t entries, uint64_t at) {
  const uint64_t limit = cursor_.limits().max_metadata_entries;
  auto total = checked_add(entries_, entries);
  if (!total || *total > limit)
    cursor_.fail(ErrorCode::limit_exceeded,
                 fmt::format("metadata holds more than {} entries (KV pairs and array elements), "
                             "the max_metadata_entries limit",
                             limit),
                 at);
  entries_ = *total;
}

GgufKv GgufMetadataReader::next() {
  GgufKv kv;
  kv.offset = cursor_.offset();
  kv.key = cursor_.string("metadata key");
  const uint64_t type_at = cursor_.offset();
  const uint32_t type = cursor_.u32();
  if (type > static_cast<uint32_t>(GgufValueType::f64))
    cursor_.fail(ErrorCode::invalid_format,
                 fmt::format("metadata key '{}' has unknown value type {}", kv.key, type), type_at);
  kv.type = static_cast<GgufValueType>(type);
  if (pairs_++ != 0) json_ += ',';
  json_ += lossy_json_text(nlohmann::json(kv.key));
  json_ += ':';
  value(type, 0, &kv);
  return kv;
}

void GgufMetadataReader::value(uint32_t type, uint32_t depth, GgufKv* scalar) {
  count_op();
  const uint64_t at = cursor_.offset();
  switch (static_cast<GgufValueType>(type)) {
    case GgufValueType::u8: return write_integer(json_, cursor_.u8(), scalar);
    case GgufValueType::i8: return write_integer(json_, static_cast<int8_t>(cursor_.u8()), scalar);
    case GgufValueType::u16: return write_integer(json_, cursor_.u16(), scalar);
    case GgufValueType::i16:
      return write_integer(json_, static_cast<int16_t>(cursor_.u16()), scalar);
    case GgufValueType::u32: return write_integer(json_, cursor_.u32(), scalar);
    case GgufValueType::i32:
      return write_integer(json_, static_cast<int32_t>(cursor_.u32()), scalar);
    case GgufValueType::u64: return write_integer(json_, cursor_.u64(), scalar);
    case GgufValueType::i64:
      return write_integer(json_, static_cast<int64_t>(cursor_.u64()), scalar);
    case GgufValueType::f32:
      return write_double(json_, static_cast<double>(std::bit_cast<float>(cursor_.u32())));
    case GgufValueType::f64: return write_double(json_, std::bit_cast<double>(cursor_.u64()));
    case GgufValueType::boolean: {
      const uint8_t b = cursor_.u8();
      if (b > 1)
        cursor_.fail(ErrorCode::invalid_format, fmt::format("bool value {} is not 0 or 1", b), at);
      json_ += b == 1 ? "true" : "false";
      return;
    }
    case GgufValueType::string: return string("metadata string");
    case GgufValueType::array: return array(depth + 1);
  }
  cursor_.fail(ErrorCode::invalid_format, fmt::format("unknown metadata value type {}", type), at);
}

void GgufMetadataReader::string(std::string_view what) {
  json_ += lossy_json_text(nlohmann::json(cursor_.string(what)));
}

void GgufMetadataReader::array(uint32_t depth) {
  const uint64_t at = cursor_.offset();
  if (depth > cursor_.limits().max_json_depth)
    cursor_.fail(ErrorCode::limit_exceeded,
                 fmt::format("metadata arrays nest deeper than {} levels, the max_json_depth limit",
                             cursor_.limits().max_json_depth),
                 at);
  const uint32_t type = cursor_.u32();
  if (type > static_cast<uint32_t>(GgufValueType::f64))
    cursor_.fail(ErrorCode::invalid_format, fmt::format("array has unknown element type {}", type),
                 at);
  const uint64_t count = cursor_.u64();
  charge(count, at);
  // Fixed-size elements: the whole array must be in the file before we loop over it.
  if (uint64_t size = fixed_size(type); size != 0) {
    auto bytes = checked_mul(count, size);
    if (!bytes)
      cursor_.fail(ErrorCode::invalid_format, fmt::format("array of {} elements overflows", count),
                   at);
    cursor_.require(*bytes);
  }
  json_ += '[';
  for (uint64_t i = 0; i < count; ++i) {
    if (i != 0) json_ += ',';
    value(type, depth, nullptr);
  }
  json_ += ']';
}

}  // namespace ballast
