// Reading GGUF metadata key-value pairs into JSON.
//
// A KV pair is: key (GGUF string), value type (u32), value. Value types: 0 u8, 1 i8, 2 u16,
// 3 i16, 4 u32, 5 i32, 6 f32, 7 bool (one byte, 0 or 1), 8 string, 9 array (element type u32,
// count u64, elements; arrays may nest), 10 u64, 11 i64, 12 f64. Values become JSON: integers
// stay exact (u64 as unsigned), f32 widens to double, arrays are complete (nested arrays as
// nested JSON arrays). Bounds: the KV count plus every array's length, summed over the file,
// stay within Limits::max_metadata_entries; arrays nest at most Limits::max_json_depth deep.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

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
  nlohmann::ordered_json value;
  uint64_t offset;  // where the pair starts in the file
};

class GgufMetadataReader {
 public:
  // `n_kv` is charged to the entry budget up front.
  GgufMetadataReader(GgufCursor& cursor, uint64_t n_kv);
  GgufKv next();

 private:
  nlohmann::ordered_json value(uint32_t type, uint32_t depth);
  nlohmann::ordered_json array(uint32_t depth);
  void charge(uint64_t entries, uint64_t at);

  GgufCursor& cursor_;
  uint64_t entries_ = 0;
};

}  // namespace ballast
