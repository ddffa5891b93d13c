// Nearest names by edit distance (see closest_names.hpp).
#include "util/closest_names.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace ballast {
namespace {

constexpr size_t kMaxNameBytes = 1024;

// The Levenshtein distance of a and b if it is at most `limit`, else limit + 1. Only cells
// within `limit` of the diagonal are computed.
size_t bounded_distance(std::string_view a, std::string_view b, size_t limit) {
  const size_t n = a.size(), m = b.size(), over = limit + 1;
  std::vector<size_t> previous(m + 1), current(m + 1);
  for (size_t j = 0; j <= m; ++j) previous[j] = std::min(j, over);
  for (size_t i = 1; i <= n; ++i) {
    const size_t from = i > limit ? i - limit : 1, to = std::min(m, i + limit);
    std::fill(current.begin(), current.end(), over);
    current[0] = std::min(i, over);
    size_t row_min = current[0];
    for (size_t j = from; j <= to; ++j) {
      const size_t substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({substitute, previous[j] + 1, current[j - 1] + 1, over});
      row_min = std::min(row_min, current[j]);
    }
    if (row_min > limit) return over;
    std::swap(previous, current);
  }
  return std::min(previous[m], over);
}

}  // namespace

std::vector<std::string> closest_names(std::string_view name,
                                       const std::vector<std::string_view>& candidates,
                                       size_t max) {
  if (name.size() > kMaxNameBytes || max == 0) return {};
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  std::vector<std::pair<size_t, std::string_view>> near;  // (distance, name), in candidate order
  for (std::string_view candidate : candidates) {
    if (candidate.size() > kMaxNameBytes || candidate == name) continue;
    const size_t gap = candidate.size() > name.size() ? candidate.size() - name.size()
                                                      : name.size() - candidate.size();
    if (gap > limit) continue;
    const size_t distance = bounded_distance(name, candidate, limit);
    if (distance <= limit) near.emplace_back(distance, candidate);
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < near.size() && i < max; ++i) out.emplace_back(near[i].second);
  return out;
}

std::string closest_names_text(std::string_view name,
                               const std::vector<std::string_view>& candidates) {
  const std::vector<std::string> names = closest_names(name, candidates);
  if (names.empty()) return {};
  std::string text = "; closest:";
  for (size_t i = 0; i < names.size(); ++i) text += fmt::format("{} '{}'", i ? "," : "", names[i]);
  return text;
}

}  // namespace ballast
