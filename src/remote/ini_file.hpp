// INI files as the AWS tools write them (~/.aws/credentials, ~/.aws/config): `[section]`
// headers, `key = value` lines, `#` and `;` comments, and indented `key = value` lines under a
// `parent =` line (a nested block such as `s3 =` / `  addressing_style = path`), stored as
// "parent.key". The files are untrusted input: at most kMaxIniBytes are read, anything that is
// not one of these forms is ignored, and so is a key longer than kMaxIniKeyBytes (AWS keys are
// a few dozen bytes; without the bound, one huge `parent =` key repeated into every nested
// line would turn a 1 MiB file into gigabytes of keys).
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
constexpr size_t kMaxIniKeyBytes = 128;

IniFile parse_ini(std::string_view text);

// nullopt when the file does not exist; Error(limit_exceeded) above kMaxIniBytes, Error(io)
// when it exists but cannot be read.
std::optional<IniFile> read_ini_file(const std::filesystem::path& path);

}  // namespace ballast
