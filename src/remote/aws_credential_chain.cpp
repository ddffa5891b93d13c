// The default credential chain (see aws_credential_chain.hpp).
#include "remote/aws_credential_chain.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "remote/aws_container_credentials.hpp"
#include "remote/aws_credential_process.hpp"
#include "remote/aws_imds.hpp"
#include "remote/aws_sso.hpp"
#include "remote/aws_web_identity.hpp"
#include "remote/url.hpp"

namespace ballast {
namespace {

using Provider = std::shared_ptr<AwsCredentialProvider>;

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
  if (Provider p = static_keys({aws_env("AWS_ACCESS_KEY_ID"),
                                aws_env("AWS_SECRET_ACCESS_KEY"),
                                aws_env("AWS_SESSION_TOKEN"),
                                {}},
                               "the environment (AWS_ACCESS_KEY_ID)",
                               "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"))
    return p;
  if (auto web = aws_web_identity_settings(profile, region)) {
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
  const std::string in_credentials =
      fmt::format("profile '{}' in {}", profile.name, aws_credentials_file().string());
  if (Provider p = profile_keys(profile.credentials, in_credentials)) return p;
  if (std::string command = profile.get("credential_process"); !command.empty()) {
    const std::string description = fmt::format("credential_process of profile '{}'", profile.name);
    return refreshing(description, [command, description] {
      return run_credential_process(command, description);
    });
  }
  const std::string in_config =
      fmt::format("profile '{}' in {}", profile.name, aws_config_file().string());
  if (Provider p = profile_keys(profile.config, in_config)) return p;
  if (auto url = aws_container_credentials_url()) {
    const std::string description = fmt::format("the container endpoint ({})", redact_url(*url));
    return refreshing(description, [url = *url, description] {
      return fetch_container_credentials(url, description);
    });
  }
  std::string imds = "turned off by AWS_EC2_METADATA_DISABLED";
  if (auto settings = aws_imds_settings()) {
    const std::string description = fmt::format("instance metadata ({})", settings->endpoint);
    try {
      return refreshing(description, [settings = *settings, description] {
        return fetch_imds_credentials(settings, description);
      });
    } catch (const Error& e) {
      imds = e.message();
    }
  }
  throw Error(
      ErrorCode::auth,
      fmt::format(
          "no AWS credentials found; ballast looked at the environment (AWS_ACCESS_KEY_ID, "
          "AWS_SECRET_ACCESS_KEY), web identity (AWS_WEB_IDENTITY_TOKEN_FILE), {} and {} "
          "(keys, sso_session, credential_process, web_identity_token_file), the container "
          "endpoint (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, AWS_CONTAINER_CREDENTIALS_FULL_URI) "
          "and instance metadata ({}). For a public bucket, ask for unsigned requests with "
          "--no-sign-request or AWS_NO_SIGN_REQUEST=true",
          in_credentials, in_config, imds),
      {.source = what});
}

}  // namespace ballast
