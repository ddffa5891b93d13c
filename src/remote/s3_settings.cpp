// S3 settings from the source, the environment and the AWS shared files (see s3_settings.hpp).
#include "remote/s3_settings.hpp"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "remote/ini_file.hpp"

namespace ballast {
namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

fs::path aws_file(const char* variable, const char* name) {
  if (std::string path = env(variable); !path.empty()) return path;
  return fs::path(env("HOME")) / ".aws" / name;
}

// The profile's sections: the credentials file names it `[NAME]`, the config file
// `[profile NAME]` (or `[default]`).
struct Profile {
  IniSection credentials;
  IniSection config;
  bool found = false;

  std::string get(const std::string& key) const {
    if (auto it = credentials.find(key); it != credentials.end()) return it->second;
    if (auto it = config.find(key); it != config.end()) return it->second;
    return {};
  }
};

Profile load_profile(const std::string& name) {
  Profile profile;
  if (auto file = read_ini_file(aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials")))
    if (auto it = file->find(name); it != file->end()) {
      profile.credentials = it->second;
      profile.found = true;
    }
  if (auto file = read_ini_file(aws_file("AWS_CONFIG_FILE", "config"))) {
    auto it = file->find("profile " + name);
    if (it == file->end() && name == "default") it = file->find("default");
    if (it != file->end()) {
      profile.config = it->second;
      profile.found = true;
    }
  }
  return profile;
}

std::optional<S3Credentials> credentials(const Profile& profile) {
  S3Credentials c{env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN")};
  const char* origin = "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY";
  if (c.access_key.empty() && c.secret_key.empty()) {
    c = {profile.get("aws_access_key_id"), profile.get("aws_secret_access_key"),
         profile.get("aws_session_token")};
    origin = "aws_access_key_id and aws_secret_access_key in the profile";
  }
  if (c.access_key.empty() && c.secret_key.empty()) return std::nullopt;
  if (c.access_key.empty() || c.secret_key.empty())
    throw Error(ErrorCode::auth, fmt::format("only one of {} is set", origin));
  return c;
}

std::string endpoint_url(std::string url) {
  while (url.ends_with('/')) url.pop_back();
  const bool http = url.starts_with("http://") || url.starts_with("https://");
  if (!http || url.find_first_of("?#@ ") != std::string::npos ||
      url.find('/', url.find("://") + 3) == url.find("://") + 3)
    throw Error(ErrorCode::invalid_argument,
                "an S3 endpoint must be an http(s)://host[:port][/path] URL", {.actual = url});
  return url;
}

S3Addressing addressing(const std::string& style) {
  if (style.empty() || style == "auto") return S3Addressing::automatic;
  if (style == "path") return S3Addressing::path;
  if (style == "virtual") return S3Addressing::virtual_hosted;
  throw Error(ErrorCode::invalid_argument, "the S3 addressing style must be auto, path or virtual",
              {.actual = style});
}

std::string region_name(std::string region) {
  const bool ok =
      !region.empty() && region.size() <= 64 &&
      region.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
  if (!ok)
    throw Error(ErrorCode::invalid_argument,
                "an S3 region is lowercase letters, digits and '-' (like eu-west-1)",
                {.actual = region});
  return region;
}

template <typename... Candidates>
std::string first_of(const Candidates&... candidates) {
  std::string out;
  ((out.empty() ? void(out = candidates) : void()), ...);
  return out;
}

}  // namespace

S3Settings s3_settings_from_env(const S3Source& source) {
  const std::string named = first_of(env("AWS_PROFILE"), env("AWS_DEFAULT_PROFILE"));
  const std::string profile_name = named.empty() ? "default" : named;
  const Profile profile = load_profile(profile_name);
  if (!named.empty() && !profile.found)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("the AWS profile '{}' is in neither shared file", named),
                {.source = fmt::format(
                     "{}, {}", aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials").string(),
                     aws_file("AWS_CONFIG_FILE", "config").string())});
  S3Settings s;
  s.credentials = credentials(profile);
  s.region =
      region_name(first_of(source.region.value_or(""), env("AWS_REGION"), env("AWS_DEFAULT_REGION"),
                           profile.get("region"), std::string("us-east-1")));
  std::string endpoint =
      first_of(source.endpoint.value_or(""), env("AWS_ENDPOINT_URL_S3"), env("AWS_ENDPOINT_URL"),
               profile.get("s3.endpoint_url"), profile.get("endpoint_url"));
  s.custom_endpoint = !endpoint.empty();
  s.endpoint = s.custom_endpoint ? endpoint_url(endpoint)
                                 : fmt::format("https://s3.{}.amazonaws.com", s.region);
  s.addressing =
      addressing(first_of(env("BALLAST_S3_ADDRESSING_STYLE"), profile.get("s3.addressing_style")));
  return s;
}

}  // namespace ballast
