// HTTP response parsing (see http_parse.hpp).
#include "remote/http_parse.hpp"

#include <cctype>
#include <charconv>

namespace ballast {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<uint64_t> parse_http_u64(std::string_view text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

long parse_http_status_line(std::string_view line) {
  size_t space = line.find(' ');
  if (space == std::string_view::npos) return 0;
  std::string_view code = line.substr(space + 1, 3);
  if (code.size() != 3) return 0;
  for (char c : code)
    if (c < '0' || c > '9') return 0;
  if (line.size() > space + 4 && line[space + 4] != ' ' && line[space + 4] != '\r' &&
      line[space + 4] != '\n')
    return 0;
  return (code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0');
}

std::optional<std::pair<std::string, std::string>> parse_http_header_line(std::string_view line) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string name(trim(line.substr(0, colon)));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::pair{std::move(name), std::string(trim(line.substr(colon + 1)))};
}

std::optional<ContentRange> parse_content_range(std::string_view text) {
  if (!text.starts_with("bytes ")) return std::nullopt;
  text.remove_prefix(6);
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  ContentRange r;
  std::string_view total = text.substr(slash + 1);
  if (total != "*") {
    r.total = parse_http_u64(total);
    if (!r.total) return std::nullopt;
  }
  std::string_view span = text.substr(0, slash);
  if (span == "*") {
    if (!r.total) return std::nullopt;  // "bytes */*" says nothing
    r.first = 1;
    return r;
  }
  size_t dash = span.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto first = parse_http_u64(span.substr(0, dash)), last = parse_http_u64(span.substr(dash + 1));
  if (!first || !last || *first > *last) return std::nullopt;
  if (r.total && *last >= *r.total) return std::nullopt;
  r.first = *first;
  r.last = *last;
  return r;
}

}  // namespace ballast
