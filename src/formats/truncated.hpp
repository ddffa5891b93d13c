// The one wording, whatever the format, for data that runs past the end of its file:
// "truncated: expected N bytes, file has M" (N: the size the file would need). The tensor and
// offset go into the Error's context as each parser has them.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace ballast {

// `needed` is nullopt when the end overflows 64 bits; `what` (optional) names the part, e.g.
// "the header" or "data of 'archive/data/0'".
inline std::string truncated_message(std::optional<uint64_t> needed, uint64_t file_size,
                                     std::string_view what = {}) {
  std::string text =
      needed ? fmt::format("truncated: expected {} bytes, file has {}", *needed, file_size)
             : fmt::format("truncated: expected more than {} bytes, file has {}",
                           std::numeric_limits<uint64_t>::max(), file_size);
  if (!what.empty()) text += fmt::format(" ({})", what);
  return text;
}

}  // namespace ballast
