// Reading GGUF metadata key-value pairs straight into JSON text.
//
// A KV pair is: key (GGUF string), value type (u32), value. Value types: 0 u8, 1 i8, 2 u16,
// 3 i16, 4 u32, 5 i32, 6 f32, 7 bool (one byte, 0 or 1), 8 string, 9 array (element type u32,
// count u64, elements; arrays may nest), 10 u64, 11 i64, 12 f64. Values become JSON: integers
// stay exact (u64 as unsigned), f32 widens to double, arrays are complete (nested arrays as
// nested JSON arrays), strings that are not UTF-8 get U+FFFD. Bounds: the KV count plus every
// array's length, summed over the file, stay within Limits::max_metadata_entries; arrays nest
// at most Limits::max_json_depth deep.
//
// The JSON is written as text while the pairs are read, never built as a tree: each element
// costs the few bytes of its text (at most 6 per byte read: "false," for a bool), where a
// JSON value per element cost 16 bytes and more per byte read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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
  std::optional<int64_t> integer;  // the value, for an integer type and a value that fits
  uint64_t offset;                 // where the pair starts in the file
};

class GgufMetadataReader {
 public:
  // `n_kv` is charged to the entry budget up front. Pairs are appended to `json` as the
  // members of a JSON object ("key":value, comma-separated, without the braces).
  GgufMetadataReader(GgufCursor& cursor, uint64_t n_kv, std::string& json);
  // Reads the next pair and appends it to the JSON text.
  GgufKv next();

 private:
  void value(uint32_t type, uint32_t depth, GgufKv* scalar);
  void array(uint32_t depth);
  void string(std::string_view what);
  void charge(uint64_t entries, uint64_t at);

  GgufCursor& cursor_;
  std::string& json_;
  uint64_t entries_ = 0;
  uint64_t pairs_ = 0;
};

}  // namespace ballast
