// The AWS profile in the shared files, as the AWS CLI and SDKs find it: AWS_PROFILE, else
// AWS_DEFAULT_PROFILE, else "default"; its section `[NAME]` in $AWS_SHARED_CREDENTIALS_FILE
// (~/.aws/credentials) and `[profile NAME]` (or `[default]`) in $AWS_CONFIG_FILE
// (~/.aws/config), and the `[sso-session NAME]` section its `sso_session` names.
#pragma once

#include <filesystem>
#include <string>

#include "remote/ini_file.hpp"

namespace ballast {

// The variable's value, "" when unset.
std::string aws_env(const char* name);

struct AwsProfile {
  std::string name;
  IniSection credentials;  // from the credentials file
  IniSection config;       // from the config file
  IniSection sso_session;  // the config file's [sso-session NAME] the profile names
  bool found = false;      // in either file

  // The key from the credentials file, else from the config file; "" when neither has it.
  std::string get(const std::string& key) const;
  // Where the profile is, for messages ("profile 'ci' in ~/.aws/credentials, ~/.aws/config").
  std::string where() const;
};

std::filesystem::path aws_credentials_file();
std::filesystem::path aws_config_file();

// Throws invalid_argument for a named profile (AWS_PROFILE, AWS_DEFAULT_PROFILE) that neither
// file has, or an sso_session that the config file lacks; limit_exceeded for an oversized file.
AwsProfile load_aws_profile();
// The profile `name` (a source_profile); `must_exist` makes its absence invalid_argument.
AwsProfile load_aws_profile(const std::string& name, bool must_exist);

}  // namespace ballast
