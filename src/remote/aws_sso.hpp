// IAM Identity Center (SSO) credentials, as `aws sso login` leaves them usable: the profile's
// sso_account_id and sso_role_name, with sso_start_url and sso_region from its [sso-session]
// section (or, for a legacy profile, from the profile itself). The access token is read from
// ~/.aws/sso/cache/<sha1 hex of the sso_session name, or of the start URL for a legacy
// profile>.json ({"accessToken", "expiresAt"}, at most kMaxAwsAnswerBytes) and exchanged by
// GetRoleCredentials: GET {portal}/federation/credentials?role_name=&account_id= with the
// token in x-amz-sso_bearer_token, where the portal is AWS_ENDPOINT_URL_SSO, else
// AWS_ENDPOINT_URL, else https://portal.sso.REGION.amazonaws.com. ballast never refreshes the
// SSO token itself: an expired one asks for `aws sso login`.
#pragma once

#include <optional>
#include <string>

#include "remote/aws_credentials.hpp"
#include "remote/aws_profile.hpp"

namespace ballast {

struct AwsSsoSettings {
  std::string account_id;
  std::string role_name;
  std::string start_url;
  std::string region;
  std::string cache_key;  // the session name, or the start URL for a legacy profile
  std::string portal;     // the endpoint, no trailing slash
};

// nullopt when the profile has no sso_account_id / sso_role_name / sso_session /
// sso_start_url; Error(invalid_argument) when it has some of them but not all it needs.
std::optional<AwsSsoSettings> aws_sso_settings(const AwsProfile& profile);

// The token cache file for the settings ($HOME/.aws/sso/cache/<sha1>.json).
std::string aws_sso_cache_file(const AwsSsoSettings& sso);

AwsCredentials fetch_sso_credentials(const AwsSsoSettings& sso, const std::string& provider);

}  // namespace ballast
