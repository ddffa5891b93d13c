// Clearing every AWS setting ballast's S3 source reads from the environment, so S3 tests start
// from a known state whatever the machine has set; instance metadata is turned off, so no test
// asks 169.254.169.254 (the tests that want it point AWS_EC2_METADATA_SERVICE_ENDPOINT at a
// stand-in and unset AWS_EC2_METADATA_DISABLED).
#pragma once

#include <stdlib.h>

namespace ballast::test {

inline constexpr const char* kAwsVariables[] = {"AWS_ACCESS_KEY_ID",
                                                "AWS_SECRET_ACCESS_KEY",
                                                "AWS_SESSION_TOKEN",
                                                "AWS_PROFILE",
                                                "AWS_DEFAULT_PROFILE",
                                                "AWS_REGION",
                                                "AWS_DEFAULT_REGION",
                                                "AWS_ENDPOINT_URL",
                                                "AWS_ENDPOINT_URL_S3",
                                                "AWS_ENDPOINT_URL_STS",
                                                "AWS_ENDPOINT_URL_SSO",
                                                "AWS_CONFIG_FILE",
                                                "AWS_SHARED_CREDENTIALS_FILE",
                                                "AWS_NO_SIGN_REQUEST",
                                                "AWS_WEB_IDENTITY_TOKEN_FILE",
                                                "AWS_ROLE_ARN",
                                                "AWS_ROLE_SESSION_NAME",
                                                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                                                "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                                                "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                                                "AWS_EC2_METADATA_SERVICE_ENDPOINT",
                                                "AWS_METADATA_SERVICE_TIMEOUT",
                                                "AWS_METADATA_SERVICE_NUM_ATTEMPTS",
                                                "BALLAST_S3_ADDRESSING_STYLE"};

inline void clear_aws_environment() {
  for (const char* name : kAwsVariables) unsetenv(name);
  setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

}  // namespace ballast::test
