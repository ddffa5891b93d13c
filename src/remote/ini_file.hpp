// INI files as the AWS tools write them (~/.aws/credentials, ~/.aws/config): `[section]`
// headers, `key = value` lines, `#` and `;` comments, and indented `key = value` lines under a
// `parent =` line (a nested block such as `s3 =` / `  addressing_style = path`), stored as
// "parent.key". The files are untrusted input: at most kMaxIniBytes are read, anything that is
// not one of these forms is ignored.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ballast {

using IniSection = std::map<std::string, std::string>;
using IniFile = std::map<std::string, IniSection>;

constexpr uint64_t kMaxIniBytes = 1 << 20;

IniFile parse_ini(std::string_view text);

// nullopt when the file does not exist; Error(limit_exceeded) above kMaxIniBytes, Error(io)
// when it exists but cannot be read.
std::optional<IniFile> read_ini_file(const std::filesystem::path& path);

}  // namespace ballast
