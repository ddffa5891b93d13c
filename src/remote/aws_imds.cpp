// IMDSv2 role credentials (see aws_imds.hpp).
#include "remote/aws_imds.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "remote/aws_http.hpp"
#include "remote/aws_profile.hpp"
#include "util/control_characters.hpp"

namespace ballast {
namespace {

constexpr const char* kCredentialsPath = "/latest/meta-data/iam/security-credentials/";

bool is_true(std::string value) {
  std::transform(value.begin(), value.end(), value.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return value == "true";
}

template <typename Number>
Number positive(const char* variable, Number fallback) {
  const std::string text = aws_env(variable);
  if (text.empty()) return fallback;
  Number value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !(value > 0) || value > 3600)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{} must be a positive number of at most 3600", variable),
                {.actual = text.substr(0, 40)});
  return value;
}

// One request, tried settings.attempts times while it fails to connect or answers 5xx.
AwsHttpAnswer imds_request(const AwsImdsSettings& settings, AwsHttpRequest request,
                           const std::string& provider) {
  request.url = settings.endpoint + request.url;
  request.timeout_seconds = settings.timeout_seconds;
  for (int attempt = 1;; ++attempt) {
    try {
      AwsHttpAnswer answer = aws_http(request, provider);
      if (answer.status < 500 || attempt >= settings.attempts) return answer;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::network || attempt >= settings.attempts) throw;
    }
  }
}

void expect_ok(const AwsHttpAnswer& answer, const std::string& provider, const char* what) {
  if (answer.status != 200)
    throw Error(ErrorCode::auth, fmt::format("{}: {} answered HTTP {}{}", provider, what,
                                             answer.status, aws_error_detail(answer.body)));
}

}  // namespace

std::optional<AwsImdsSettings> aws_imds_settings() {
  if (is_true(aws_env("AWS_EC2_METADATA_DISABLED"))) return std::nullopt;
  AwsImdsSettings s;
  s.endpoint = aws_env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  if (s.endpoint.empty()) s.endpoint = "http://169.254.169.254";
  while (s.endpoint.ends_with('/')) s.endpoint.pop_back();
  s.timeout_seconds = positive("AWS_METADATA_SERVICE_TIMEOUT", 1.0);
  s.attempts = positive("AWS_METADATA_SERVICE_NUM_ATTEMPTS", 1);
  return s;
}

AwsCredentials fetch_imds_credentials(const AwsImdsSettings& settings,
                                      const std::string& provider) {
  const AwsHttpAnswer token =
      imds_request(settings,
                   {.method = "PUT",
                    .url = "/latest/api/token",
                    .headers = {{"X-aws-ec2-metadata-token-ttl-seconds", "21600"}}},
                   provider);
  expect_ok(token, provider, "PUT /latest/api/token");
  if (token.body.empty() || has_control_character(token.body))
    throw Error(
        ErrorCode::auth,
        fmt::format("{}: the session token is empty or holds a control character", provider));
  const std::map<std::string, std::string> headers{{"X-aws-ec2-metadata-token", token.body}};
  const AwsHttpAnswer roles =
      imds_request(settings, {.url = kCredentialsPath, .headers = headers}, provider);
  expect_ok(roles, provider, "the role name");
  const std::string role = roles.body.substr(0, roles.body.find_first_of("\r\n"));
  const bool role_ok =
      !role.empty() && role.size() <= 128 &&
      std::all_of(role.begin(), role.end(), [](unsigned char c) {
        return std::isalnum(c) || std::string_view("+=,.@_-").find(c) != std::string_view::npos;
      });
  if (!role_ok)
    throw Error(ErrorCode::auth,
                fmt::format("{}: the instance has no IAM role (no valid role name)", provider));
  const AwsHttpAnswer answer =
      imds_request(settings, {.url = kCredentialsPath + role, .headers = headers}, provider);
  expect_ok(answer, provider, "the role's credentials");
  return aws_credentials_from_json(answer.body, provider, "Token");
}

}  // namespace ballast
