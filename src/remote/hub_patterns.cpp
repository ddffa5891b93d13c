// huggingface_hub's allow/ignore patterns (see hub_patterns.hpp).
#include "remote/hub_patterns.hpp"

#include <fnmatch.h>

#include <algorithm>

namespace ballast {
namespace {

std::string with_slashes(std::string_view text) {
  std::string out(text);
  std::ranges::replace(out, '\\', '/');
  return out;
}

// Python's fnmatch.fnmatchcase: no escapes, '*' matches '/' and a leading '.'.
bool matches(const std::string& path, std::string_view pattern) {
  std::string glob = with_slashes(pattern);
  if (glob.ends_with('/')) glob += '*';
  return ::fnmatch(glob.c_str(), path.c_str(), FNM_NOESCAPE) == 0;
}

}  // namespace

bool hub_path_selected(std::string_view path, const std::vector<std::string>& include,
                       const std::vector<std::string>& exclude) {
  const std::string p = with_slashes(path);
  auto any = [&](const std::vector<std::string>& patterns) {
    return std::ranges::any_of(patterns, [&](const std::string& g) { return matches(p, g); });
  };
  return (include.empty() || any(include)) && !any(exclude);
}

}  // namespace ballast
