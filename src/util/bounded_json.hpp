// JSON from untrusted files (safetensors headers, shard indexes), parsed in linear time with
// bounded nesting. A first pass runs nlohmann's SAX parser with a handler that builds nothing:
// it checks the syntax, the nesting depth and, when asked, that the top-level object has no
// duplicate keys (compared decoded, so "a" and "\u0061" collide). Only then is the DOM built,
// by the plain parser. This replaces nlohmann's callback parser, whose end_object scans the
// parent object for a discarded child each time one of its objects ends: quadratic in the
// number of entries (a 3200-tensor header spent 25% of a mapped open there, and a hostile
// header of a few million empty objects would hang the loader).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ballast {

struct JsonProblem {
  enum class Kind : uint8_t { none, syntax, too_deep, duplicate_key } kind = Kind::none;
  std::string detail;   // the parser's message, or the duplicated key
  uint64_t offset = 0;  // byte offset in the text, where known
};

// Checks `text` without building it: at most `max_depth` containers open at once (the top
// level counts as one), and unique top-level keys when `unique_top_level_keys`.
JsonProblem check_json(std::string_view text, uint32_t max_depth, bool unique_top_level_keys);

// The parsed value of text that check_json accepted.
nlohmann::json parse_checked_json(std::string_view text);

}  // namespace ballast
