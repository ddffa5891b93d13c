// The AWS SDKs' default credential chain, in the AWS CLI's order; the first provider that is
// configured gives the credentials (its failure is the error, the chain does not go on):
//   1. the environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN)
//   2. an assumed role: the profile's role_arn with source_profile (whose own credentials,
//      found by 2-7 without the environment, sign AssumeRole; chains of roles too) or
//      credential_source (aws_assume_role.hpp)
//   3. web identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN, or the profile's
//      web_identity_token_file + role_arn, through STS (aws_web_identity.hpp)
//   4. SSO: the profile's sso_* settings and the token cache (aws_sso.hpp)
//   5. the profile's aws_access_key_id + aws_secret_access_key in the credentials file
//   6. the profile's credential_process (aws_credential_process.hpp)
//   7. the profile's aws_access_key_id + aws_secret_access_key in the config file
//   8. the container endpoint (aws_container_credentials.hpp)
//   9. EC2 instance metadata, IMDSv2 (aws_imds.hpp); here a failure counts as "not found"
// Temporary credentials are refreshed before they expire (aws_credential_provider.hpp). None
// found is Error(auth) listing where ballast looked; unsigned requests are made only when
// asked for (AWS_NO_SIGN_REQUEST=true, the CLI's --no-sign-request).
#pragma once

#include <memory>
#include <string>

#include "remote/aws_credential_provider.hpp"
#include "remote/aws_profile.hpp"

namespace ballast {

// AWS_NO_SIGN_REQUEST: true or false in any case, unset is false; other values are
// Error(invalid_argument).
bool aws_no_sign_request();

// The provider of the first configured link of the chain; `region` is the region STS is asked
// in (web identity), `what` names the request in errors ("s3://bucket/key").
std::shared_ptr<AwsCredentialProvider> aws_default_credentials(const AwsProfile& profile,
                                                               const std::string& region,
                                                               const std::string& what);

}  // namespace ballast
