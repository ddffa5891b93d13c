// S3Settings: where an S3-compatible bucket is and how to sign for it, resolved as the AWS
// CLI and SDKs do. First the S3Source's own region and endpoint, then the environment, then
// the profile (AWS_PROFILE, AWS_DEFAULT_PROFILE, else "default") in the shared files:
//   credentials  the AWS SDKs' default chain (aws_credential_chain.hpp): environment,
//                assumed roles, web identity, SSO, profile keys, credential_process,
//                container, instance metadata; none found is an error. Unsigned requests
//                only when asked for: AWS_NO_SIGN_REQUEST=true (the CLI's --no-sign-request)
//   region       AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`, else us-east-1
//   endpoint     AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's `s3.endpoint_url` or
//                `endpoint_url`, else https://s3.REGION.amazonaws.com
//   addressing   BALLAST_S3_ADDRESSING_STYLE, the profile's `s3.addressing_style`
//                (auto, path or virtual); auto is virtual-hosted for AWS's own endpoint and
//                path-style for a custom one (MinIO, Ceph RGW, R2 and the like)
#pragma once

#include <memory>
#include <string>

#include "ballast/source.hpp"
#include "remote/aws_credential_provider.hpp"

namespace ballast {

enum class S3Addressing { automatic, path, virtual_hosted };

struct S3Settings {
  std::string region = "us-east-1";
  std::string endpoint;  // scheme://host[:port][/base], no trailing slash
  bool custom_endpoint = false;
  S3Addressing addressing = S3Addressing::automatic;
  std::shared_ptr<AwsCredentialProvider> credentials;  // null: anonymous (asked for)
};

// Throws invalid_argument for a named profile that no shared file has, an unknown addressing
// style or an endpoint that is not an http(s) URL; auth for half a key pair, no credentials
// found (and no AWS_NO_SIGN_REQUEST), or a provider that failed.
S3Settings s3_settings_from_env(const S3Source& source);

}  // namespace ballast
