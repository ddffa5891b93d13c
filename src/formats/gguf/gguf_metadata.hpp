// Reading GGUF metadata key-value pairs into typed values (ballast/metadata_value.hpp).
//
// A KV pair is: key (GGUF string), value type (u32), value. Value types: 0 u8, 1 i8, 2 u16,
// 3 i16, 4 u32, 5 i32, 6 f32, 7 bool (one byte, 0 or 1), 8 string, 9 array (element type u32,
// count u64, elements; arrays may nest), 10 u64, 11 i64, 12 f64. Each value keeps its GGUF
// type; arrays are complete (nested arrays as arrays of values). Bounds: the KV count plus
// every array's length, summed over the file, stay within Limits::max_metadata_entries;
// arrays nest at most Limits::max_json_depth deep.
//
// Arrays of numbers and bools are read into one buffer of their element type, whose bytes are
// the file's own: no per-element object. A string costs its std::string (32 bytes) against
// at least 8 bytes read, a nested array its MetadataValue against at least 12 bytes read, so
// the values stay within a few times the bytes read; their JSON text (to_json: at most 6
// bytes per byte read, "false," for a bool) is rendered from them once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ballast/metadata_value.hpp"
#include "formats/gguf/gguf_cursor.hpp"

namespace ballast {

enum class GgufValueType : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};

struct GgufKv {
  std::string key;
  GgufValueType type;
  MetadataValue value;
  std::optional<int64_t> integer;  // the value, for an integer type and a value that fits
  uint64_t offset;                 // where the pair starts in the file
};

class GgufMetadataReader {
 public:
  // `n_kv` is charged to the entry budget up front.
  GgufMetadataReader(GgufCursor& cursor, uint64_t n_kv);
  // Reads the next pair.
  GgufKv next();

 private:
  MetadataValue value(uint32_t type, uint32_t depth);
  MetadataValue array(uint32_t depth);
  template <typename T, typename Read>
  MetadataValue numbers(uint64_t count, Read read);
  MetadataValue bools(uint64_t count);
  void charge(uint64_t entries, uint64_t at);

  GgufCursor& cursor_;
  uint64_t entries_ = 0;
};

}  // namespace ballast
