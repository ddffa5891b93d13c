// GGUF KV pairs to typed values (format in gguf_metadata.hpp).
#include "formats/gguf/gguf_metadata.hpp"

#include <bit>
#include <vector>

#include <fmt/format.h>

#include "util/checked.hpp"
#include "util/error_text.hpp"
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

constexpr uint8_t kStringLeaves = 1;
constexpr uint8_t kOtherLeaves = 2;

// The kinds of scalars an array holds at any depth.
uint8_t leaf_kinds(const MetadataValue& array) {
  if (array.element_type() != MetadataType::array) {
    if (array.size() == 0) return 0;
    return array.element_type() == MetadataType::string ? kStringLeaves : kOtherLeaves;
  }
  uint8_t kinds = 0;
  for (const MetadataValue& inner : array.values()) kinds |= leaf_kinds(inner);
  return kinds;
}

// gguf-py's GGUFReader types an array of arrays by its first elements alone: strings when that
// chain ends in a non-empty array of strings, numbers otherwise.
bool read_as_strings(const MetadataValue& array) {
  const MetadataValue* first = &array;
  while (first->element_type() == MetadataType::array && first->size() != 0)
    first = &first->values().front();
  return first->element_type() == MetadataType::string && first->size() != 0;
}

}  // namespace

GgufMetadataReader::GgufMetadataReader(GgufCursor& cursor, uint64_t n_kv) : cursor_(cursor) {
  charge(n_kv, cursor.offset());
}

void GgufMetadataReader::charge(uint64_t entries, uint64_t at) {
  const uint64_t limit = cursor_.limits().max_metadata_entries;
  auto total = checked_add(entries_, entries);
  if (!total || *total > limit)
    cursor_.fail(ErrorCode::limit_exceeded,
                 limit_message("metadata entry count (KV pairs and array elements)", std::nullopt,
                               "max_metadata_entries", limit),
                 at);
  entries_ = *total;
}

GgufKv GgufMetadataReader::next() {
  GgufKv kv;
  kv.offset = cursor_.offset();
  kv.key = cursor_.name("metadata key");
  const uint64_t type_at = cursor_.offset();
  const uint32_t type = cursor_.u32();
  if (type > static_cast<uint32_t>(GgufValueType::f64))
    cursor_.fail(ErrorCode::invalid_format,
                 fmt::format("metadata key '{}' has unknown value type {}", kv.key, type), type_at);
  kv.type = static_cast<GgufValueType>(type);
  kv.value = value(type, 0);
  if (kv.value.is_integer() &&
      (kv.value.type() != MetadataType::u64 || kv.value.as_uint() <= INT64_MAX))
    kv.integer = kv.value.as_int();
  return kv;
}

MetadataValue GgufMetadataReader::value(uint32_t type, uint32_t depth) {
  count_op();
  const uint64_t at = cursor_.offset();
  switch (static_cast<GgufValueType>(type)) {
    case GgufValueType::u8: return MetadataValue(cursor_.u8());
    case GgufValueType::i8: return MetadataValue(static_cast<int8_t>(cursor_.u8()));
    case GgufValueType::u16: return MetadataValue(cursor_.u16());
    case GgufValueType::i16: return MetadataValue(static_cast<int16_t>(cursor_.u16()));
    case GgufValueType::u32: return MetadataValue(cursor_.u32());
    case GgufValueType::i32: return MetadataValue(static_cast<int32_t>(cursor_.u32()));
    case GgufValueType::u64: return MetadataValue(cursor_.u64());
    case GgufValueType::i64: return MetadataValue(static_cast<int64_t>(cursor_.u64()));
    case GgufValueType::f32: return MetadataValue(std::bit_cast<float>(cursor_.u32()));
    case GgufValueType::f64: return MetadataValue(std::bit_cast<double>(cursor_.u64()));
    case GgufValueType::boolean: {
      const uint8_t b = cursor_.u8();
      if (b > 1)
        cursor_.fail(ErrorCode::invalid_format, fmt::format("bool value {} is not 0 or 1", b), at);
      return MetadataValue(b == 1);
    }
    case GgufValueType::string: return MetadataValue(cursor_.string("metadata string"));
    case GgufValueType::array: return array(depth + 1);
  }
  cursor_.fail(ErrorCode::invalid_format, fmt::format("unknown metadata value type {}", type), at);
}

template <typename T, typename Read>
MetadataValue GgufMetadataReader::numbers(uint64_t count, Read read) {
  std::vector<T> elements;
  elements.reserve(count);  // the caller checked that the file holds them
  for (uint64_t i = 0; i < count; ++i) {
    count_op();
    elements.push_back(std::bit_cast<T>(read()));
  }
  return MetadataValue::array_of(std::move(elements));
}

MetadataValue GgufMetadataReader::bools(uint64_t count) {
  std::vector<uint8_t> bits;
  bits.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    count_op();
    const uint64_t at = cursor_.offset();
    const uint8_t b = cursor_.u8();
    if (b > 1)
      cursor_.fail(ErrorCode::invalid_format, fmt::format("bool value {} is not 0 or 1", b), at);
    bits.push_back(b);
  }
  return MetadataValue::array_of_bools(std::move(bits));
}

MetadataValue GgufMetadataReader::array(uint32_t depth) {
  const uint64_t at = cursor_.offset();
  if (depth > cursor_.limits().max_json_depth)
    cursor_.fail(ErrorCode::limit_exceeded,
                 limit_message("metadata array depth", depth, "max_json_depth",
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
  auto u8 = [this] { return cursor_.u8(); };
  auto u16 = [this] { return cursor_.u16(); };
  auto u32 = [this] { return cursor_.u32(); };
  auto u64 = [this] { return cursor_.u64(); };
  switch (static_cast<GgufValueType>(type)) {
    case GgufValueType::u8: return numbers<uint8_t>(count, u8);
    case GgufValueType::i8: return numbers<int8_t>(count, u8);
    case GgufValueType::u16: return numbers<uint16_t>(count, u16);
    case GgufValueType::i16: return numbers<int16_t>(count, u16);
    case GgufValueType::u32: return numbers<uint32_t>(count, u32);
    case GgufValueType::i32: return numbers<int32_t>(count, u32);
    case GgufValueType::f32: return numbers<float>(count, u32);
    case GgufValueType::u64: return numbers<uint64_t>(count, u64);
    case GgufValueType::i64: return numbers<int64_t>(count, u64);
    case GgufValueType::f64: return numbers<double>(count, u64);
    case GgufValueType::boolean: return bools(count);
    case GgufValueType::string: {
      std::vector<std::string> strings;  // no reserve: each one is checked against the file
      for (uint64_t i = 0; i < count; ++i) {
        count_op();
        strings.push_back(cursor_.string("metadata string"));
      }
      return MetadataValue::array_of_strings(std::move(strings));
    }
    case GgufValueType::array: break;
  }
  std::vector<MetadataValue> arrays;
  for (uint64_t i = 0; i < count; ++i) arrays.push_back(value(type, depth));
  MetadataValue nested = MetadataValue::array_of_values(std::move(arrays), MetadataType::array);
  // gguf-py reads strings where the first elements lead it to expect numbers, and the reverse.
  if (depth == 1 &&
      (leaf_kinds(nested) & (read_as_strings(nested) ? kOtherLeaves : kStringLeaves)) != 0)
    cursor_.fail(ErrorCode::invalid_format,
                 "array of arrays mixes strings with other values (or starts with an empty array "
                 "before strings), which gguf-py's GGUFReader reads as other values",
                 at);
  return nested;
}

}  // namespace ballast
