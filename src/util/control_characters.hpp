// Control characters in text that is sent on as an HTTP header (credentials, tokens, the
// caller's headers): CR or LF would end the header and start another, and no credential or
// header value holds any of them.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <string_view>

namespace ballast {

// True when `text` holds a byte below 0x20 (CR, LF, TAB, NUL...) or DEL (0x7f).
inline bool has_control_character(std::string_view text) {
  return std::ranges::any_of(text, [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
}

// Error(invalid_argument) starting with `what` ("default_headers") when a name is not an HTTP
// token or a value holds a control character other than tab; a value is never quoted.
void check_http_headers(const std::map<std::string, std::string>& headers, std::string_view what,
                        const std::string& source = {});

}  // namespace ballast
