// Hub settings from the environment (see hub_settings.hpp).
#include "remote/hub_settings.hpp"

#include <cstdlib>
#include <fstream>

namespace ballast {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

}  // namespace

HubSettings hub_settings_from_env(const std::optional<std::filesystem::path>& cache_dir) {
  HubSettings s;
  if (std::string endpoint = env("HF_ENDPOINT"); !endpoint.empty()) s.endpoint = endpoint;
  while (s.endpoint.ends_with('/')) s.endpoint.pop_back();
  std::filesystem::path home = env("HF_HOME");
  if (home.empty()) {
    std::filesystem::path xdg = env("XDG_CACHE_HOME");
    if (xdg.empty())
      xdg = std::filesystem::path(env("HOME").empty() ? "/tmp" : env("HOME")) / ".cache";
    home = xdg / "huggingface";
  }
  s.token = trimmed(env("HF_TOKEN"));
  if (s.token.empty()) {
    std::ifstream in(home / "token");
    std::string line;
    if (in && std::getline(in, line)) s.token = trimmed(line);
  }
  if (cache_dir)
    s.cache_dir = *cache_dir;
  else if (std::string hub = env("HF_HUB_CACHE"); !hub.empty())
    s.cache_dir = hub;
  else
    s.cache_dir = home / "hub";
  const std::string offline = env("HF_HUB_OFFLINE");
  s.offline = offline == "1" || offline == "true" || offline == "TRUE" || offline == "yes" ||
              offline == "ON" || offline == "on";
  return s;
}

}  // namespace ballast
