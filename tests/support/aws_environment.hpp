// Clearing every AWS setting ballast's S3 source reads from the environment, so S3 tests start
// from a known state whatever the machine has set.
#pragma once

#include <stdlib.h>

namespace ballast::test {

inline constexpr const char* kAwsVariables[] = {
    "AWS_ACCESS_KEY_ID",           "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",           "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",         "AWS_REGION",
    "AWS_DEFAULT_REGION",          "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",         "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE", "BALLAST_S3_ADDRESSING_STYLE"};

inline void clear_aws_environment() {
  for (const char* name : kAwsVariables) unsetenv(name);
}

}  // namespace ballast::test
