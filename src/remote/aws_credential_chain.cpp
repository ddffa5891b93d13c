// The default credential chain (see aws_credential_chain.hpp).
#include "remote/aws_credential_chain.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "remote/aws_assume_role.hpp"
#include "remote/aws_container_credentials.hpp"
#include "remote/aws_credential_process.hpp"
#include "remote/aws_imds.hpp"
#include "remote/aws_sso.hpp"
#include "remote/aws_web_identity.hpp"
#include "util/redact_url.hpp"

namespace ballast {
namespace {

using Provider = std::shared_ptr<AwsCredentialProvider>;

constexpr size_t kMaxRoleChain = 8;  // source_profile hops

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string section_value(const IniSection& section, const char* key) {
  auto it = section.find(key);
  return it == section.end() ? std::string() : it->second;
}

// A key pair (with an optional token); nullptr when neither half is set, Error(auth) for one.
Provider static_keys(AwsCredentials keys, const std::string& description, const char* names) {
  if (keys.access_key.empty() && keys.secret_key.empty()) return nullptr;
  if (keys.access_key.empty() || keys.secret_key.empty())
    throw Error(ErrorCode::auth, fmt::format("only one of {} is set", names),
                {.source = description});
  return std::make_shared<AwsCredentialProvider>("credentials from " + description,
                                                 std::move(keys));
}

Provider environment_keys() {
  return static_keys({aws_env("AWS_ACCESS_KEY_ID"),
                      aws_env("AWS_SECRET_ACCESS_KEY"),
                      aws_env("AWS_SESSION_TOKEN"),
                      {}},
                     "the environment (AWS_ACCESS_KEY_ID)",
                     "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
}

Provider profile_keys(const IniSection& section, const std::string& description) {
  return static_keys({section_value(section, "aws_access_key_id"),
                      section_value(section, "aws_secret_access_key"),
                      section_value(section, "aws_session_token"),
                      {}},
                     description, "aws_access_key_id and aws_secret_access_key");
}

template <typename Fetch>
Provider refreshing(const std::string& description, Fetch fetch) {
  return std::make_shared<AwsCredentialProvider>("credentials from " + description,
                                                 std::move(fetch));
}

Provider container_provider() {
  auto url = aws_container_credentials_url();
  if (!url) return nullptr;
  const std::string description = fmt::format("the container endpoint ({})", redact_url(*url));
  return refreshing(description, [url = *url, description] {
    return fetch_container_credentials(url, description);
  });
}

Provider imds_provider(const AwsImdsSettings& settings) {
  const std::string description =
      fmt::format("instance metadata ({})", redact_url(settings.endpoint));
  return refreshing(description, [settings, description] {
    return fetch_imds_credentials(settings, description);
  });
}

Provider profile_provider(const AwsProfile& profile, const std::string& region,
                          std::set<std::string>& visited, bool with_environment);

// The credentials a role is assumed with: its source_profile's, or its credential_source.
Provider role_source(const AwsProfile& profile, const std::string& region,
                     std::set<std::string>& visited) {
  if (std::string source = profile.get("credential_source"); !source.empty()) {
    Provider p;
    if (source == "Environment") p = environment_keys();
    if (source == "EcsContainer") p = container_provider();
    if (source == "Ec2InstanceMetadata")
      if (auto imds = aws_imds_settings()) p = imds_provider(*imds);
    if (!p)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("the AWS profile '{}' has credential_source = {}, which gives no "
                              "credentials (Environment, EcsContainer and Ec2InstanceMetadata "
                              "are known)",
                              profile.name, source.substr(0, 40)),
                  {.source = profile.where()});
    return p;
  }
  const std::string name = profile.get("source_profile");
  const std::string where = profile.where();
  if (name == profile.name) {  // the profile's own keys, as the AWS CLI allows
    if (Provider p = profile_keys(profile.credentials, where)) return p;
    if (Provider p = profile_keys(profile.config, where)) return p;
  } else if (visited.size() < kMaxRoleChain && visited.insert(name).second) {
    if (Provider p = profile_provider(load_aws_profile(name, true), region, visited, false))
      return p;
  } else {
    throw Error(ErrorCode::invalid_argument,
                fmt::format("the AWS profile '{}' starts a source_profile cycle or a chain longer "
                            "than {} profiles",
                            profile.name, kMaxRoleChain),
                {.source = where});
  }
  throw Error(ErrorCode::auth,
              fmt::format("the source_profile '{}' of the AWS profile '{}' gives no credentials",
                          name, profile.name),
              {.source = where});
}

// What a profile itself provides, in the AWS CLI's order: an assumed role, web identity, SSO,
// the credentials file's keys, credential_process, the config file's keys.
Provider profile_provider(const AwsProfile& profile, const std::string& region,
                          std::set<std::string>& visited, bool with_environment) {
  if (auto role = aws_assume_role_settings(profile, region)) {
    Provider source = role_source(profile, region, visited);
    const std::string description =
        fmt::format("the role {} (profile '{}')", role->role_arn, profile.name);
    return refreshing(description, [role = *role, source, description] {
      return fetch_assumed_role_credentials(role, *source, description);
    });
  }
  if (auto web = aws_web_identity_settings(profile, region, with_environment)) {
    const std::string description = fmt::format("web identity (role {})", web->role_arn);
    return refreshing(description, [web = *web, description] {
      return fetch_web_identity_credentials(web, description);
    });
  }
  if (auto sso = aws_sso_settings(profile)) {
    const std::string description = fmt::format("SSO (profile '{}', account {}, role {})",
                                                profile.name, sso->account_id, sso->role_name);
    return refreshing(
        description, [sso = *sso, description] { return fetch_sso_credentials(sso, description); });
  }
  if (Provider p = profile_keys(profile.credentials, fmt::format("profile '{}' in {}", profile.name,
                                                                 aws_credentials_file().string())))
    return p;
  if (std::string command = profile.get("credential_process"); !command.empty()) {
    const std::string description = fmt::format("credential_process of profile '{}'", profile.name);
    return refreshing(description, [command, description] {
      return run_credential_process(command, description);
    });
  }
  return profile_keys(profile.config,
                      fmt::format("profile '{}' in {}", profile.name, aws_config_file().string()));
}

}  // namespace

bool aws_no_sign_request() {
  const std::string value = lowercase(aws_env("AWS_NO_SIGN_REQUEST"));
  if (value.empty() || value == "false") return false;
  if (value == "true") return true;
  throw Error(ErrorCode::invalid_argument, "AWS_NO_SIGN_REQUEST must be true or false",
              {.actual = value.substr(0, 40)});
}

std::shared_ptr<AwsCredentialProvider> aws_default_credentials(const AwsProfile& profile,
                                                               const std::string& region,
                                                               const std::string& what) {
  if (Provider p = environment_keys()) return p;
  std::set<std::string> visited{profile.name};
  if (Provider p = profile_provider(profile, region, visited, true)) return p;
  if (Provider p = container_provider()) return p;
  std::string imds = "turned off by AWS_EC2_METADATA_DISABLED";
  if (auto settings = aws_imds_settings()) {
    try {
      return imds_provider(*settings);
    } catch (const Error& e) {
      imds = e.message();
    }
  }
  throw Error(
      ErrorCode::auth,
      fmt::format(
          "no AWS credentials found; ballast looked at the environment (AWS_ACCESS_KEY_ID, "
          "AWS_SECRET_ACCESS_KEY), web identity (AWS_WEB_IDENTITY_TOKEN_FILE), profile '{}' in "
          "{} and {} (role_arn, web_identity_token_file, sso_session, keys, "
          "credential_process), the container endpoint (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, "
          "AWS_CONTAINER_CREDENTIALS_FULL_URI) and instance metadata ({}). For a public bucket, "
          "ask for unsigned requests with --no-sign-request or AWS_NO_SIGN_REQUEST=true",
          profile.name, aws_credentials_file().string(), aws_config_file().string(), imds),
      {.source = what});
}

}  // namespace ballast
