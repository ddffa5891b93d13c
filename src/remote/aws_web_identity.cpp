// AssumeRoleWithWebIdentity (see aws_web_identity.hpp).
#include "remote/aws_web_identity.hpp"

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "remote/aws_assume_role.hpp"
#include "remote/aws_http.hpp"
#include "remote/url.hpp"
#include "util/redact_url.hpp"

namespace ballast {
namespace {

std::string trimmed(std::string text) {
  const size_t end = text.find_last_not_of(" \t\r\n");
  text.resize(end == std::string::npos ? 0 : end + 1);
  return text.substr(std::min(text.size(), text.find_first_not_of(" \t\r\n")));
}

}  // namespace

std::optional<AwsWebIdentitySettings> aws_web_identity_settings(const AwsProfile& profile,
                                                                const std::string& region,
                                                                bool with_environment) {
  AwsWebIdentitySettings s;
  if (with_environment)
    s = {aws_env("AWS_WEB_IDENTITY_TOKEN_FILE"),
         aws_env("AWS_ROLE_ARN"),
         aws_env("AWS_ROLE_SESSION_NAME"),
         {}};
  if (s.token_file.empty()) {
    s = {profile.get("web_identity_token_file"),
         profile.get("role_arn"),
         profile.get("role_session_name"),
         {}};
    if (s.token_file.empty()) return std::nullopt;
  }
  if (s.role_arn.empty())
    throw Error(ErrorCode::invalid_argument,
                "a web identity token file is set (AWS_WEB_IDENTITY_TOKEN_FILE or the profile's "
                "web_identity_token_file) without a role (AWS_ROLE_ARN or role_arn)");
  if (s.session_name.empty())
    s.session_name = fmt::format("ballast-{}", AwsClock::to_time_t(AwsClock::now()));
  s.sts_endpoint = aws_sts_endpoint(region);
  return s;
}

AwsCredentials fetch_web_identity_credentials(const AwsWebIdentitySettings& settings,
                                              const std::string& provider) {
  const std::optional<std::string> token =
      read_small_text_file(settings.token_file, kMaxAwsAnswerBytes);
  if (!token || trimmed(*token).empty())
    throw Error(ErrorCode::auth, fmt::format("{}: the token file is missing or empty", provider),
                {.source = settings.token_file});
  const std::string form = fmt::format(
      "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn={}&RoleSessionName={}"
      "&WebIdentityToken={}",
      url_quote(settings.role_arn, false), url_quote(settings.session_name, false),
      url_quote(trimmed(*token), false));
  const AwsHttpAnswer answer =
      aws_http({.method = "POST",
                .url = settings.sts_endpoint + "/",
                .headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}},
                .body = form,
                .timeout_seconds = 10},
               provider);
  if (answer.status != 200)
    throw Error(ErrorCode::auth,
                fmt::format("{}: AssumeRoleWithWebIdentity answered HTTP {}{}", provider,
                            answer.status, aws_error_detail(answer.body)),
                {.source = redact_url(settings.sts_endpoint)});
  return aws_sts_credentials(answer.body, provider, settings.sts_endpoint);
}

}  // namespace ballast
