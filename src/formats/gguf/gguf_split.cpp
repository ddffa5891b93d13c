// Split-file names of llama.cpp's gguf-split (see gguf_split.hpp).
#include "formats/gguf/gguf_split.hpp"

#include <fmt/format.h>
#include <charconv>

namespace ballast {
namespace {

constexpr std::string_view kSuffix = ".gguf";
constexpr std::string_view kOf = "-of-";
constexpr uint32_t kMaxShards = 65535;  // split.count is a u16

// Parses the run of at least 5 decimal digits that ends at `end` (exclusive), moving `end` to
// its start; nullopt when there is none or it overflows.
std::optional<uint32_t> digits_before(std::string_view s, size_t& end) {
  size_t begin = end;
  while (begin > 0 && s[begin - 1] >= '0' && s[begin - 1] <= '9') --begin;
  if (end - begin < 5 || end - begin > 9) return std::nullopt;
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data() + begin, s.data() + end, v);
  if (ec != std::errc{} || ptr != s.data() + end) return std::nullopt;
  end = begin;
  return v;
}

}  // namespace

std::optional<GgufSplitName> parse_gguf_split_name(std::string_view filename) {
  if (!filename.ends_with(kSuffix)) return std::nullopt;
  size_t end = filename.size() - kSuffix.size();
  auto count = digits_before(filename, end);
  if (!count || end < kOf.size() || filename.substr(end - kOf.size(), kOf.size()) != kOf)
    return std::nullopt;
  end -= kOf.size();
  auto index = digits_before(filename, end);
  if (!index || end < 2 || filename[end - 1] != '-') return std::nullopt;  // a nonempty prefix
  if (*index < 1 || *index > *count || *count > kMaxShards) return std::nullopt;
  return GgufSplitName{std::string(filename.substr(0, end - 1)), *index, *count};
}

std::vector<std::string> gguf_split_siblings(std::string_view filename) {
  auto split = parse_gguf_split_name(filename);
  if (!split) return {};
  std::vector<std::string> names;
  names.reserve(split->count);
  for (uint32_t i = 1; i <= split->count; ++i)
    names.push_back(fmt::format("{}-{:05d}-of-{:05d}.gguf", split->prefix, i, split->count));
  return names;
}

}  // namespace ballast
