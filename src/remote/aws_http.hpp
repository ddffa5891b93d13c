// One small HTTP request to a credential endpoint (STS, the SSO portal, the container
// credentials endpoint, instance metadata): any method, a body of at most kMaxAwsAnswerBytes
// kept (more is an error), no redirects followed, no proxy for link-local and loopback hosts,
// and a deadline for the whole request; SigV4-signed by libcurl when asked (STS AssumeRole). TLS is
// verified against AWS_CA_BUNDLE, else BALLAST_CA_BUNDLE, else CURL_CA_BUNDLE, else libcurl's
// default. Failures to connect are Error(network) naming `provider`; HTTP statuses are results.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "remote/aws_credentials.hpp"

namespace ballast {

inline constexpr uint64_t kMaxAwsAnswerBytes = 64 << 10;

struct AwsHttpRequest {
  std::string method = "GET";
  std::string url;
  std::map<std::string, std::string> headers;  // secrets possible: never printed
  std::string body;
  double timeout_seconds = 5;  // connect timeout and deadline of the whole request
  // SigV4 with these credentials (their token as X-Amz-Security-Token) for "REGION:SERVICE";
  // unsigned when signing_scope is empty.
  AwsCredentials signing_keys;
  std::string signing_scope;
};

struct AwsHttpAnswer {
  long status = 0;
  std::string body;
};

AwsHttpAnswer aws_http(const AwsHttpRequest& request, const std::string& provider);

// The text of the first <name>...</name> in an XML answer (STS, S3), "" when there is none.
std::string aws_xml_field(const std::string& body, std::string_view name);

// The temporary credentials in an STS answer (AssumeRole, AssumeRoleWithWebIdentity): its
// <Credentials>, which must carry an Expiration and a whole key pair, else Error(auth) naming
// `provider` and the (redacted) `endpoint`.
AwsCredentials aws_sts_credentials(const std::string& body, const std::string& provider,
                                   const std::string& endpoint);

// A short, printable excerpt of an error answer for messages, " (CODE: message)" (at most 200
// bytes of the S3/STS <Code> and <Message> or the JSON "message"), or "" when there is none.
std::string aws_error_detail(const std::string& body);

}  // namespace ballast
