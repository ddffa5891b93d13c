// SSO role credentials from the token cache and the portal (see aws_sso.hpp).
#include "remote/aws_sso.hpp"

#include <openssl/sha.h>

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "remote/aws_http.hpp"
#include "remote/url.hpp"
#include "util/control_characters.hpp"
#include "util/redact_url.hpp"

namespace ballast {
namespace {

std::string sha1_hex(const std::string& text) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  std::string hex;
  for (unsigned char byte : digest) hex += fmt::format("{:02x}", byte);
  return hex;
}

std::string without_trailing_slash(std::string url) {
  while (url.ends_with('/')) url.pop_back();
  return url;
}

std::string cached_token(const AwsSsoSettings& sso, const std::string& provider) {
  const std::string path = aws_sso_cache_file(sso);
  const std::optional<std::string> text = read_small_text_file(path, kMaxAwsAnswerBytes);
  if (!text)
    throw Error(ErrorCode::auth,
                fmt::format("{}: no cached SSO token; run `aws sso login`", provider),
                {.source = path});
  const nlohmann::json cache = nlohmann::json::parse(*text, nullptr, false);
  const auto* token = cache.is_object() && cache.contains("accessToken")
                          ? cache["accessToken"].get_ptr<const std::string*>()
                          : nullptr;
  const auto* expires = cache.is_object() && cache.contains("expiresAt")
                            ? cache["expiresAt"].get_ptr<const std::string*>()
                            : nullptr;
  if (token == nullptr || token->empty() || expires == nullptr)
    throw Error(ErrorCode::auth,
                fmt::format("{}: the SSO token cache lacks accessToken or expiresAt", provider),
                {.source = path});
  if (has_control_character(*token))
    throw Error(ErrorCode::auth,
                fmt::format("{}: the cached SSO token holds a control character", provider),
                {.source = path});
  const auto expiration = parse_aws_time(*expires);
  if (!expiration || *expiration <= AwsClock::now())
    throw Error(ErrorCode::auth,
                fmt::format("{}: the cached SSO token has expired; run `aws sso login`", provider),
                {.source = path});
  return *token;
}

}  // namespace

std::optional<AwsSsoSettings> aws_sso_settings(const AwsProfile& profile) {
  const std::string session = profile.get("sso_session");
  AwsSsoSettings sso{.account_id = profile.get("sso_account_id"),
                     .role_name = profile.get("sso_role_name")};
  if (!session.empty()) {
    auto get = [&](const char* key) {
      auto it = profile.sso_session.find(key);
      return it == profile.sso_session.end() ? std::string() : it->second;
    };
    sso.start_url = get("sso_start_url");
    sso.region = get("sso_region");
    sso.cache_key = session;
  } else {
    sso.start_url = profile.get("sso_start_url");
    sso.region = profile.get("sso_region");
    sso.cache_key = sso.start_url;
  }
  if (session.empty() && sso.start_url.empty() && sso.account_id.empty() && sso.role_name.empty())
    return std::nullopt;
  if (sso.account_id.empty() || sso.role_name.empty() || sso.start_url.empty() ||
      sso.region.empty())
    throw Error(ErrorCode::invalid_argument,
                fmt::format("the AWS profile '{}' is an SSO profile without all of "
                            "sso_account_id, sso_role_name, sso_start_url and sso_region",
                            profile.name),
                {.source = profile.where()});
  if (sso.region.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos)
    throw Error(ErrorCode::invalid_argument, "sso_region is not a region name",
                {.source = profile.where()});
  std::string portal = aws_env("AWS_ENDPOINT_URL_SSO");
  if (portal.empty()) portal = aws_env("AWS_ENDPOINT_URL");
  if (portal.empty()) portal = fmt::format("https://portal.sso.{}.amazonaws.com", sso.region);
  sso.portal = without_trailing_slash(portal);
  return sso;
}

std::string aws_sso_cache_file(const AwsSsoSettings& sso) {
  return fmt::format("{}/.aws/sso/cache/{}.json", aws_env("HOME"), sha1_hex(sso.cache_key));
}

AwsCredentials fetch_sso_credentials(const AwsSsoSettings& sso, const std::string& provider) {
  const std::string token = cached_token(sso, provider);
  const AwsHttpAnswer answer = aws_http(
      {.url = fmt::format("{}/federation/credentials?role_name={}&account_id={}", sso.portal,
                          url_quote(sso.role_name, false), url_quote(sso.account_id, false)),
       .headers = {{"x-amz-sso_bearer_token", token}},
       .timeout_seconds = 10},
      provider);
  if (answer.status != 200)
    throw Error(ErrorCode::auth,
                fmt::format("{}: GetRoleCredentials answered HTTP {}{}", provider, answer.status,
                            aws_error_detail(answer.body)),
                {.source = redact_url(sso.portal)});
  const nlohmann::json document = nlohmann::json::parse(answer.body, nullptr, false);
  const nlohmann::json* role = document.is_object() && document.contains("roleCredentials")
                                   ? &document["roleCredentials"]
                                   : nullptr;
  if (role == nullptr || !role->is_object() ||
      !role->value("expiration", nlohmann::json()).is_number_integer())
    throw Error(ErrorCode::auth,
                fmt::format("{}: the answer is not a roleCredentials object", provider),
                {.source = redact_url(sso.portal)});
  // The same fields as the other providers' documents, with lowercase names and epoch ms.
  const nlohmann::json as_document = {
      {"AccessKeyId", role->value("accessKeyId", nlohmann::json())},
      {"SecretAccessKey", role->value("secretAccessKey", nlohmann::json())},
      {"SessionToken", role->value("sessionToken", nlohmann::json())}};
  AwsCredentials c = aws_credentials_from_json(as_document.dump(), provider, "SessionToken");
  // Milliseconds since the epoch, kept below the clock's end (2262) as parse_aws_time does.
  const int64_t millis = std::clamp<int64_t>((*role)["expiration"].get<int64_t>(), 0,
                                             int64_t{7258118400} * 1000);  // 2200-01-01
  c.expiration = AwsClock::time_point(std::chrono::milliseconds(millis));
  check_aws_credentials(c, provider);
  return c;
}

}  // namespace ballast
