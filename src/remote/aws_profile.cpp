// The AWS profile from the shared files (see aws_profile.hpp).
#include "remote/aws_profile.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "ballast/error.hpp"

namespace ballast {
namespace {

namespace fs = std::filesystem;

fs::path aws_file(const char* variable, const char* name) {
  if (std::string path = aws_env(variable); !path.empty()) return path;
  return fs::path(aws_env("HOME")) / ".aws" / name;
}

}  // namespace

std::string aws_env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string AwsProfile::get(const std::string& key) const {
  if (auto it = credentials.find(key); it != credentials.end()) return it->second;
  if (auto it = config.find(key); it != config.end()) return it->second;
  return {};
}

std::string AwsProfile::where() const {
  return fmt::format("profile '{}' in {}, {}", name, aws_credentials_file().string(),
                     aws_config_file().string());
}

fs::path aws_credentials_file() { return aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials"); }
fs::path aws_config_file() { return aws_file("AWS_CONFIG_FILE", "config"); }

AwsProfile load_aws_profile() {
  std::string named = aws_env("AWS_PROFILE");
  if (named.empty()) named = aws_env("AWS_DEFAULT_PROFILE");
  return load_aws_profile(named.empty() ? "default" : named, !named.empty());
}

AwsProfile load_aws_profile(const std::string& name, bool must_exist) {
  AwsProfile profile;
  profile.name = name;
  if (auto file = read_ini_file(aws_credentials_file()))
    if (auto it = file->find(profile.name); it != file->end()) {
      profile.credentials = it->second;
      profile.found = true;
    }
  if (auto file = read_ini_file(aws_config_file())) {
    auto it = file->find("profile " + profile.name);
    if (it == file->end() && profile.name == "default") it = file->find("default");
    if (it != file->end()) {
      profile.config = it->second;
      profile.found = true;
    }
    if (std::string session = profile.get("sso_session"); !session.empty()) {
      auto section = file->find("sso-session " + session);
      if (section == file->end())
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("the AWS profile '{}' names the sso_session '{}', which the "
                                "config file lacks",
                                profile.name, session),
                    {.source = aws_config_file().string()});
      profile.sso_session = section->second;
    }
  }
  if (must_exist && !profile.found)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("the AWS profile '{}' is in neither shared file", name),
                {.source = fmt::format("{}, {}", aws_credentials_file().string(),
                                       aws_config_file().string())});
  return profile;
}

}  // namespace ballast
