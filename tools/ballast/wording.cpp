// Counts and name order for people (see wording.hpp).
#include "wording.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace ballast::cli {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The digit run of `s` that starts at `i`, without its leading zeros, and where it ends.
std::string_view digit_run(std::string_view s, size_t i, size_t& end) {
  end = i;
  while (end < s.size() && is_digit(s[end])) ++end;
  size_t first = i;
  while (first + 1 < end && s[first] == '0') ++first;
  return s.substr(first, end - first);
}

}  // namespace

std::string counted(uint64_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

bool natural_less(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      size_t a_end = 0, b_end = 0;
      const std::string_view x = digit_run(a, i, a_end), y = digit_run(b, j, b_end);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      if (a_end - i != b_end - j) return a_end - i < b_end - j;  // fewer leading zeros first
      i = a_end;
      j = b_end;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

std::vector<std::string> naturally_sorted(std::vector<std::string> names) {
  std::stable_sort(names.begin(), names.end(),
                   [](const std::string& a, const std::string& b) { return natural_less(a, b); });
  return names;
}

}  // namespace ballast::cli
