// Role assumption from a profile, as the AWS CLI does it: a profile with role_arn and
// source_profile (or credential_source: Environment, Ec2InstanceMetadata, EcsContainer) gets
// its credentials from STS AssumeRole (a SigV4-signed POST of the query form, service "sts"),
// signed with the source's current credentials, at AWS_ENDPOINT_URL_STS, else
// AWS_ENDPOINT_URL, else https://sts.REGION.amazonaws.com. The profile's role_session_name
// (default "ballast-<epoch seconds>"), external_id and duration_seconds go along; mfa_serial
// (an interactive code) is not supported.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "remote/aws_credential_provider.hpp"
#include "remote/aws_credentials.hpp"
#include "remote/aws_profile.hpp"

namespace ballast {

struct AwsAssumeRoleSettings {
  std::string role_arn;
  std::string session_name;
  std::string external_id;       // empty: none
  std::string duration_seconds;  // empty: STS's default
  std::string region;
  std::string sts_endpoint;  // no trailing slash
};

// nullopt when the profile has no role_arn with source_profile or credential_source (a
// role_arn with web_identity_token_file is web identity's). Error(invalid_argument) for both
// sources or a duration_seconds that is not a number, unsupported for mfa_serial.
std::optional<AwsAssumeRoleSettings> aws_assume_role_settings(const AwsProfile& profile,
                                                              const std::string& region);

// The STS endpoint for `region`: AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL, else AWS's own.
std::string aws_sts_endpoint(const std::string& region);

AwsCredentials fetch_assumed_role_credentials(const AwsAssumeRoleSettings& settings,
                                              AwsCredentialProvider& source,
                                              const std::string& provider);

}  // namespace ballast
