// STS AssumeRole with a source's credentials (see aws_assume_role.hpp).
#include "remote/aws_assume_role.hpp"

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "remote/aws_http.hpp"
#include "remote/url.hpp"
#include "util/redact_url.hpp"

namespace ballast {

std::string aws_sts_endpoint(const std::string& region) {
  std::string endpoint = aws_env("AWS_ENDPOINT_URL_STS");
  if (endpoint.empty()) endpoint = aws_env("AWS_ENDPOINT_URL");
  if (endpoint.empty()) endpoint = fmt::format("https://sts.{}.amazonaws.com", region);
  while (endpoint.ends_with('/')) endpoint.pop_back();
  return endpoint;
}

std::optional<AwsAssumeRoleSettings> aws_assume_role_settings(const AwsProfile& profile,
                                                              const std::string& region) {
  const std::string role_arn = profile.get("role_arn");
  const bool source_profile = !profile.get("source_profile").empty();
  const bool credential_source = !profile.get("credential_source").empty();
  if (role_arn.empty()) return std::nullopt;
  if (!source_profile && !credential_source) return std::nullopt;  // web identity, or unused
  if (source_profile && credential_source)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("the AWS profile '{}' has both source_profile and credential_source",
                            profile.name),
                {.source = profile.where()});
  if (!profile.get("mfa_serial").empty())
    throw Error(ErrorCode::unsupported,
                fmt::format("the AWS profile '{}' needs an MFA code (mfa_serial), which ballast "
                            "cannot ask for; use temporary credentials from `aws sts` instead",
                            profile.name),
                {.source = profile.where()});
  AwsAssumeRoleSettings s{role_arn,
                          profile.get("role_session_name"),
                          profile.get("external_id"),
                          profile.get("duration_seconds"),
                          region,
                          aws_sts_endpoint(region)};
  if (s.session_name.empty())
    s.session_name = fmt::format("ballast-{}", AwsClock::to_time_t(AwsClock::now()));
  if (!s.duration_seconds.empty() &&
      (s.duration_seconds.size() > 6 ||
       s.duration_seconds.find_first_not_of("0123456789") != std::string::npos))
    throw Error(ErrorCode::invalid_argument, "duration_seconds must be a number of seconds",
                {.source = profile.where(), .actual = s.duration_seconds.substr(0, 40)});
  return s;
}

AwsCredentials fetch_assumed_role_credentials(const AwsAssumeRoleSettings& settings,
                                              AwsCredentialProvider& source,
                                              const std::string& provider) {
  std::string form =
      fmt::format("Action=AssumeRole&Version=2011-06-15&RoleArn={}&RoleSessionName={}",
                  url_quote(settings.role_arn, false), url_quote(settings.session_name, false));
  if (!settings.external_id.empty())
    form += "&ExternalId=" + url_quote(settings.external_id, false);
  if (!settings.duration_seconds.empty()) form += "&DurationSeconds=" + settings.duration_seconds;
  const AwsHttpAnswer answer =
      aws_http({.method = "POST",
                .url = settings.sts_endpoint + "/",
                .headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}},
                .body = form,
                .timeout_seconds = 10,
                .signing_keys = source.current(),
                .signing_scope = settings.region + ":sts"},
               provider);
  if (answer.status != 200)
    throw Error(ErrorCode::auth,
                fmt::format("{}: AssumeRole answered HTTP {}{}, signed with {}", provider,
                            answer.status, aws_error_detail(answer.body), source.description()),
                {.source = redact_url(settings.sts_endpoint)});
  return aws_sts_credentials(answer.body, provider, settings.sts_endpoint);
}

}  // namespace ballast
