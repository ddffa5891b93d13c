// URL helpers (see url.hpp).
#include "remote/url.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "util/redact_url.hpp"

namespace ballast {
namespace {

// Position just after "scheme://", or 0 when there is no scheme.
size_t after_scheme(std::string_view url) {
  size_t p = url.find("://");
  return p == std::string_view::npos ? 0 : p + 3;
}

size_t query_start(std::string_view url) {
  size_t p = url.find_first_of("?#", after_scheme(url));
  return p == std::string_view::npos ? url.size() : p;
}

}  // namespace

std::string url_path(std::string_view url) {
  const size_t start = after_scheme(url);
  std::string_view rest = url.substr(start, query_start(url) - start);
  size_t slash = start == 0 ? 0 : rest.find('/');
  return slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
}

std::string confined_relative_path(std::string_view relative, std::string_view where) {
  auto refuse = [&](std::string_view why) -> std::string {
    throw Error(ErrorCode::invalid_format, fmt::format("refusing path '{}': {}", relative, why),
                {.source = std::string(where)});
  };
  if (relative.empty()) return refuse("empty path");
  if (relative.find_first_of(std::string_view("\0\\?#", 4)) != std::string_view::npos)
    return refuse("NUL, backslash, '?' or '#' in path");
  if (relative.front() == '/' || relative.find("://") != std::string_view::npos ||
      relative.find(':') < relative.find('/'))
    return refuse("absolute paths and URLs are not allowed");
  std::string path;  // `relative` without "." segments
  for (size_t begin = 0; begin <= relative.size();) {
    size_t end = std::min(relative.find('/', begin), relative.size());
    std::string_view part = relative.substr(begin, end - begin);
    if (part == "..") return refuse("'..' would leave the model folder");
    if (part.empty() && end != relative.size()) return refuse("empty path segment");
    if (!part.empty() && part != ".") path += (path.empty() ? "" : "/") + std::string(part);
    begin = end + 1;
  }
  if (path.empty()) return refuse("empty path");
  return path;
}

std::string resolve_relative_url(std::string_view base, std::string_view relative) {
  const std::string where = redact_url(base);
  std::string path = confined_relative_path(relative, where);
  std::string_view folder = base.substr(0, query_start(base));
  const size_t start = after_scheme(folder);
  size_t last_slash = folder.rfind('/');
  if (last_slash == std::string_view::npos || last_slash < start)
    throw Error(ErrorCode::invalid_format, "the URL has no path", {.source = where});
  return std::string(folder.substr(0, last_slash + 1)) + url_quote(path, true);
}

std::string url_quote(std::string_view text, bool keep_slash) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/'))
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

}  // namespace ballast
