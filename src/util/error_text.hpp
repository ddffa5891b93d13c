// One wording for each kind of error that many places raise, whatever the format:
//   invalid_format   data that runs past the end of its file:
//                    "truncated: expected N bytes, file has M" (N: the size the file would need)
//   invalid_format   a read of a byte range that runs past the end of its source:
//                    "read of N bytes past the end of a M-byte source" (or "object", "file")
//   limit_exceeded   a Limits bound crossed:
//                    "<what> <value> exceeds the <limit> limit of <max>" (the value left out
//                    where a count stops at the limit rather than being known in full)
// The tensor and offset go into the Error's context as each caller has them.
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

// `length` bytes asked for at an offset (the Error's context) of a `size`-byte `what`.
inline std::string past_end_message(uint64_t length, uint64_t size,
                                    std::string_view what = "source") {
  return fmt::format("read of {} bytes past the end of a {}-byte {}", length, size, what);
}

// `what` names the quantity ("tensor count", "rank", "header length"); `limit` the Limits
// field ("max_tensors").
inline std::string limit_message(std::string_view what, std::optional<uint64_t> value,
                                 std::string_view limit, uint64_t max) {
  return value ? fmt::format("{} {} exceeds the {} limit of {}", what, *value, limit, max)
               : fmt::format("{} exceeds the {} limit of {}", what, limit, max);
}

}  // namespace ballast
