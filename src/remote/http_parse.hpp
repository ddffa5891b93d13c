// Pure parsers for what an HTTP server sends back: the status line, header lines, sizes
// (Content-Length) and Content-Range. No I/O and no state: the libcurl callbacks and the
// fetch checks call these, and fuzz/ feeds them arbitrary bytes. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ballast {

// A decimal uint64 with nothing around it ("42"); nullopt for anything else or on overflow.
std::optional<uint64_t> parse_http_u64(std::string_view text);

// "HTTP/1.1 206 Partial Content" -> 206; 0 when the line has no three-digit status code.
long parse_http_status_line(std::string_view line);

// "Name: value\r\n" -> {"name", "value"}: the name lowercased, both trimmed of blanks and
// line ends; nullopt for a line without a colon (the blank line that ends the headers).
std::optional<std::pair<std::string, std::string>> parse_http_header_line(std::string_view line);

struct ContentRange {
  uint64_t first = 0, last = 0;
  std::optional<uint64_t> total;  // nullopt for "*"
};

// "bytes FIRST-LAST/TOTAL" (TOTAL may be "*"; LAST < TOTAL), or "bytes */TOTAL" (the answer to
// an unsatisfiable range), returned with first > last. nullopt for anything else.
std::optional<ContentRange> parse_content_range(std::string_view text);

}  // namespace ballast
