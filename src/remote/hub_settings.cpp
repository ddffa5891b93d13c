// Hub settings from the environment (see hub_settings.hpp).
#include "remote/hub_settings.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "util/control_characters.hpp"

namespace ballast {
namespace {

constexpr size_t kMaxTokenFileBytes = 64 << 10;  // a token file is a line; refuse to slurp more

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The first of the variables that is set and not empty (Python's `a or b`).
std::string env_or(const char* name, const char* fallback) {
  std::string value = env(name);
  return value.empty() ? env(fallback) : value;
}

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// $HOME, else the user's home folder from the password database (as Python's expanduser).
std::string home_dir() {
  if (std::string home = env("HOME"); !home.empty()) return home;
  passwd entry{};
  passwd* user = nullptr;
  std::string buffer(16 << 10, '\0');
  ::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &user);
  return user != nullptr && user->pw_dir != nullptr ? user->pw_dir : "/";
}

// os.path.expandvars(os.path.expanduser(text)): a leading "~" or "~/" becomes the home folder;
// $NAME and ${NAME} become the variable's value, unset ones stay as written.
std::filesystem::path expanded(const std::string& text) {
  std::string in = text;
  if (in == "~" || in.starts_with("~/")) in = home_dir() + in.substr(1);
  std::string out;
  for (size_t i = 0; i < in.size();) {
    const size_t dollar = in.find('$', i);
    out.append(in, i, dollar == std::string::npos ? std::string::npos : dollar - i);
    if (dollar == std::string::npos) break;
    const bool braced = in.compare(dollar + 1, 1, "{") == 0;
    const size_t start = dollar + 1 + (braced ? 1 : 0);
    size_t end = start;
    while (end < in.size() && is_name_char(in[end])) ++end;
    const bool well_formed = end > start && (!braced || (end < in.size() && in[end] == '}'));
    const char* value = well_formed ? std::getenv(in.substr(start, end - start).c_str()) : nullptr;
    if (value == nullptr) {
      out += '$';
      i = dollar + 1;
      continue;
    }
    out += value;
    i = end + (braced ? 1 : 0);
  }
  return out;
}

// huggingface_hub's _clean_token: newlines removed, surrounding spaces trimmed.
std::string cleaned_token(std::string s) {
  std::erase_if(s, [](char c) { return c == '\r' || c == '\n'; });
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

std::string token_from_file(const std::filesystem::path& path) {
  const std::optional<std::string> text = read_small_text_file(path, kMaxTokenFileBytes);
  return text ? cleaned_token(*text) : std::string();
}

bool is_true(std::string value) {
  std::ranges::transform(value, value.begin(),
                         [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return value == "1" || value == "ON" || value == "YES" || value == "TRUE";
}

// $HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface.
std::filesystem::path hf_home() {
  if (std::string home = env("HF_HOME"); !home.empty()) return expanded(home);
  std::string xdg = env("XDG_CACHE_HOME");
  if (xdg.empty()) xdg = home_dir() + "/.cache";
  return expanded(xdg + "/huggingface");
}

}  // namespace

std::filesystem::path hub_cache_dir_from_env() {
  if (std::string hub = env_or("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"); !hub.empty())
    return expanded(hub);
  return hf_home() / "hub";
}

HubSettings hub_settings_from_env(const std::optional<std::filesystem::path>& cache_dir) {
  HubSettings s;
  if (std::string endpoint = env("HF_ENDPOINT"); !endpoint.empty()) s.endpoint = endpoint;
  while (s.endpoint.ends_with('/')) s.endpoint.pop_back();
  const std::filesystem::path home = hf_home();
  std::string token_source = env("HF_TOKEN").empty() ? "HUGGING_FACE_HUB_TOKEN" : "HF_TOKEN";
  s.token = cleaned_token(env_or("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"));
  if (s.token.empty()) {
    const std::string path = env("HF_TOKEN_PATH");
    const std::filesystem::path file = path.empty() ? home / "token" : expanded(path);
    token_source = "the token file " + file.string();
    s.token = token_from_file(file);
  }
  // The token goes into an Authorization header: a control character left after the cleaning
  // (CR and LF are removed, as huggingface_hub does) is refused, never quoted.
  if (has_control_character(s.token))
    throw Error(
        ErrorCode::auth,
        fmt::format("the Hugging Face token from {} holds a control character", token_source));
  s.cache_dir = cache_dir ? *cache_dir : hub_cache_dir_from_env();
  s.offline = is_true(env_or("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"));
  return s;
}

}  // namespace ballast
