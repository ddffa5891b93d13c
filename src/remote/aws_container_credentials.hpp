// Container credentials (ECS tasks, EKS Pod Identity, Greengrass): GET
// http://169.254.170.2$AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, else
// $AWS_CONTAINER_CREDENTIALS_FULL_URI, which must be https or an http URL whose host is a
// loopback address (127.0.0.0/8, [::1], localhost) or one of the container hosts
// 169.254.170.2, 169.254.170.23 and [fd00:ec2::23]. The Authorization header is the content of
// AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (read anew for each request), else
// AWS_CONTAINER_AUTHORIZATION_TOKEN. The answer is {"AccessKeyId", "SecretAccessKey", "Token",
// "Expiration"} (at most kMaxAwsAnswerBytes); each request has a 5 s deadline.
#pragma once

#include <optional>
#include <string>

#include "remote/aws_credentials.hpp"

namespace ballast {

// The endpoint from the environment; nullopt when neither variable is set. Error
// (invalid_argument) for a FULL_URI on a host that is not allowed.
std::optional<std::string> aws_container_credentials_url();

AwsCredentials fetch_container_credentials(const std::string& url, const std::string& provider);

}  // namespace ballast
