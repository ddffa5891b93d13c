// Clearing every AWS setting ballast's S3 source reads from the environment, so S3 tests start
// from a known state whatever the machine has set; instance metadata is turned off, so no test
// asks 169.254.169.254 (the tests that want it point AWS_EC2_METADATA_SERVICE_ENDPOINT at a
// stand-in and unset AWS_EC2_METADATA_DISABLED). AwsIsolatedTest is the fixture that does it
// for each test, with an empty HOME.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "support/test_support.hpp"

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

// Each test starts with the AWS settings cleared and HOME an empty folder, `home_` (no ~/.aws
// of the machine's); both are restored after it. Fixtures that derive call SetUp() first.
class AwsIsolatedTest : public testing::Test {
 protected:
  void SetUp() override {
    if (const char* home = std::getenv("HOME")) saved_home_ = home;
    setenv("HOME", home_.path().c_str(), 1);
    clear_aws_environment();
  }
  void TearDown() override {
    clear_aws_environment();
    setenv("HOME", saved_home_.c_str(), 1);
  }

  TempDir home_;

 private:
  std::string saved_home_;
};

}  // namespace ballast::test
