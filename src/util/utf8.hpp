// Strict UTF-8 validation, as Python's bytes.decode('utf-8') judges it: no overlong forms, no
// surrogates, nothing above U+10FFFF, no truncated sequences. With `allow_surrogates`, as
// decode('utf-8', 'surrogatepass') judges it (what pickle's BINUNICODE opcodes use).
#pragma once

#include <cstddef>
#include <string_view>

namespace ballast {

inline bool is_valid_utf8(std::string_view text, bool allow_surrogates = false) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  for (size_t i = 0; i < text.size();) {
    const unsigned char lead = byte(i);
    size_t length = 0;
    unsigned char low = 0x80, high = 0xbf;  // the range of the second byte
    if (lead < 0x80) {
      ++i;
      continue;
    }
    if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      if (lead == 0xe0) low = 0xa0;                        // overlong
      if (lead == 0xed && !allow_surrogates) high = 0x9f;  // surrogates
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      if (lead == 0xf0) low = 0x90;   // overlong
      if (lead == 0xf4) high = 0x8f;  // above U+10FFFF
    } else {
      return false;
    }
    if (text.size() - i < length) return false;
    if (byte(i + 1) < low || byte(i + 1) > high) return false;
    for (size_t k = 2; k < length; ++k)
      if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return false;
    i += length;
  }
  return true;
}

}  // namespace ballast
