// Web identity credentials (EKS IRSA and the like): the token in AWS_WEB_IDENTITY_TOKEN_FILE
// with AWS_ROLE_ARN and AWS_ROLE_SESSION_NAME, else the profile's web_identity_token_file,
// role_arn and role_session_name, exchanged by STS AssumeRoleWithWebIdentity (an unsigned
// POST of the query form) at AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else
// https://sts.REGION.amazonaws.com. The token file is read anew for every exchange (the
// platform rotates it), at most kMaxAwsAnswerBytes; the session name defaults to
// "ballast-<epoch seconds>".
#pragma once

#include <optional>
#include <string>

#include "remote/aws_credentials.hpp"
#include "remote/aws_profile.hpp"

namespace ballast {

struct AwsWebIdentitySettings {
  std::string token_file;
  std::string role_arn;
  std::string session_name;
  std::string sts_endpoint;  // no trailing slash
};

// nullopt when neither the environment (unless `with_environment` is false: a
// source_profile) nor the profile names a token file; Error(invalid_argument) for a token
// file without a role.
std::optional<AwsWebIdentitySettings> aws_web_identity_settings(const AwsProfile& profile,
                                                                const std::string& region,
                                                                bool with_environment = true);

AwsCredentials fetch_web_identity_credentials(const AwsWebIdentitySettings& settings,
                                              const std::string& provider);

}  // namespace ballast
