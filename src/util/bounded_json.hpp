// JSON from untrusted files (shard indexes), parsed in linear time with bounded nesting. A
// first pass runs nlohmann's SAX parser with a handler that builds nothing: it checks the
// syntax and the nesting depth. Only then is the DOM built, by the plain parser. This
// replaces nlohmann's callback parser, whose end_object scans the parent object for a
// discarded child each time one of its objects ends: quadratic in the number of entries (a
// hostile index of a few million empty objects would hang the loader). Safetensors headers
// have their own one-pass reader (formats/safetensors/header_sax.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ballast {

struct JsonProblem {
  enum class Kind : uint8_t { none, syntax, too_deep } kind = Kind::none;
  std::string detail;   // the parser's message
  uint64_t offset = 0;  // byte offset in the text, where known
};

// Checks `text` without building it: at most `max_depth` containers open at once (the top
// level counts as one).
JsonProblem check_json(std::string_view text, uint32_t max_depth);

// The parsed value of text that check_json accepted.
nlohmann::json parse_checked_json(std::string_view text);

}  // namespace ballast
