// INI parsing for the AWS shared files (see ini_file.hpp).
#include "remote/ini_file.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/file_source.hpp"

namespace ballast {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

IniFile parse_ini(std::string_view text) {
  IniFile file;
  IniSection* section = nullptr;
  std::string parent;  // the key of the last `key =` line with an empty value
  while (!text.empty()) {
    const size_t eol = std::min(text.find('\n'), text.size());
    std::string_view raw = text.substr(0, eol);
    text.remove_prefix(std::min(eol + 1, text.size()));
    const bool indented = !raw.empty() && is_blank(raw.front());
    std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[' && line.back() == ']' && !indented) {
      section = &file[std::string(trim(line.substr(1, line.size() - 2)))];
      parent.clear();
      continue;
    }
    const size_t eq = line.find('=');
    if (section == nullptr || eq == std::string_view::npos) continue;
    const std::string key(trim(line.substr(0, eq)));
    const std::string value(trim(line.substr(eq + 1)));
    if (key.empty()) continue;
    if (key.size() > kMaxIniKeyBytes) {  // ignored, though a top-level one ends a nested block
      if (!indented) parent.clear();
      continue;
    }
    if (indented && !parent.empty()) {
      (*section)[parent + "." + key] = value;
      continue;
    }
    parent = value.empty() ? key : "";
    (*section)[key] = value;
  }
  return file;
}

std::optional<IniFile> read_ini_file(const std::filesystem::path& path) {
  const std::optional<std::string> text = read_small_text_file(path, kMaxIniBytes);
  if (!text) return std::nullopt;
  return parse_ini(*text);
}

}  // namespace ballast
