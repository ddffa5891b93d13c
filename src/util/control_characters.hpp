// Control characters in text that is sent on as an HTTP header value (credentials, tokens):
// CR or LF would end the header and start another, and no credential holds any of them.
#pragma once

#include <algorithm>
#include <string_view>

namespace ballast {

// True when `text` holds a byte below 0x20 (CR, LF, TAB, NUL...) or DEL (0x7f).
inline bool has_control_character(std::string_view text) {
  return std::ranges::any_of(text, [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
}

}  // namespace ballast
