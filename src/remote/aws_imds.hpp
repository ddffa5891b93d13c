// EC2 instance metadata credentials, IMDSv2 only: PUT /latest/api/token with
// X-aws-ec2-metadata-token-ttl-seconds: 21600, then with X-aws-ec2-metadata-token the role
// name from GET /latest/meta-data/iam/security-credentials/ and its credentials from
// GET .../<role> ({"Code": "Success", "AccessKeyId", "SecretAccessKey", "Token",
// "Expiration"}). The endpoint is AWS_EC2_METADATA_SERVICE_ENDPOINT, else
// http://169.254.169.254; AWS_EC2_METADATA_DISABLED=true turns the provider off. Each request
// has the deadline AWS_METADATA_SERVICE_TIMEOUT (1 s) and is tried
// AWS_METADATA_SERVICE_NUM_ATTEMPTS times (1), as the SDKs do, so a machine that is not an EC2
// instance costs a failed connection or at most that second.
#pragma once

#include <optional>
#include <string>

#include "remote/aws_credentials.hpp"

namespace ballast {

struct AwsImdsSettings {
  std::string endpoint;  // no trailing slash
  double timeout_seconds = 1;
  int attempts = 1;
};

// nullopt when AWS_EC2_METADATA_DISABLED is true; Error(invalid_argument) for a timeout or
// attempt count that is not a positive number.
std::optional<AwsImdsSettings> aws_imds_settings();

AwsCredentials fetch_imds_credentials(const AwsImdsSettings& settings, const std::string& provider);

}  // namespace ballast
