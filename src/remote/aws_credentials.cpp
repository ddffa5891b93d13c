// Parsing of the credential documents and timestamps (see aws_credentials.hpp).
#include "remote/aws_credentials.hpp"

#include <time.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/error.hpp"
#include "util/control_characters.hpp"

namespace ballast {
namespace {

constexpr size_t kMaxFieldBytes = 8 << 10;  // session tokens are ~1-2 KB

std::string field(const nlohmann::json& object, const char* name, const std::string& provider) {
  auto it = object.find(name);
  if (it == object.end()) return {};
  if (!it->is_string() || it->get_ref<const std::string&>().size() > kMaxFieldBytes)
    throw Error(ErrorCode::auth, fmt::format("{}: the field {} is not a string of at most {} bytes",
                                             provider, name, kMaxFieldBytes));
  return it->get<std::string>();
}

}  // namespace

std::optional<AwsClock::time_point> parse_aws_time(std::string_view text) {
  if (text.size() < 20 || text.size() > 40) return std::nullopt;
  const std::string s(text);
  tm parts{};
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &parts.tm_year, &parts.tm_mon,
                  &parts.tm_mday, &parts.tm_hour, &parts.tm_min, &parts.tm_sec, &consumed) != 6 ||
      consumed != 19)
    return std::nullopt;
  std::string_view rest = text.substr(19);
  if (rest.starts_with('.')) {
    rest.remove_prefix(1);
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') rest.remove_prefix(1);
  }
  if (rest != "Z" && rest != "+00:00") return std::nullopt;
  if (parts.tm_mon < 1 || parts.tm_mon > 12 || parts.tm_mday < 1 || parts.tm_mday > 31 ||
      parts.tm_hour > 23 || parts.tm_min > 59 || parts.tm_sec > 60)
    return std::nullopt;
  // Later than 2200 is kept as 2200: the clock's nanoseconds end in 2262.
  parts.tm_year = std::min(parts.tm_year, 2200) - 1900;
  parts.tm_mon -= 1;
  return AwsClock::from_time_t(timegm(&parts));
}

AwsCredentials aws_credentials_from_json(std::string_view document, const std::string& provider,
                                         const char* token_field) {
  const nlohmann::json object = nlohmann::json::parse(document, nullptr, false);
  if (!object.is_object())
    throw Error(ErrorCode::auth, fmt::format("{}: the answer is not a JSON object", provider));
  AwsCredentials c{field(object, "AccessKeyId", provider),
                   field(object, "SecretAccessKey", provider),
                   field(object, token_field, provider),
                   {}};
  if (std::string expiration = field(object, "Expiration", provider); !expiration.empty()) {
    c.expiration = parse_aws_time(expiration);
    if (!c.expiration)
      throw Error(ErrorCode::auth,
                  fmt::format("{}: Expiration is not an ISO 8601 UTC time", provider),
                  {.actual = expiration.substr(0, 40)});
  }
  check_aws_credentials(c, provider);
  return c;
}

void check_aws_credentials(const AwsCredentials& credentials, const std::string& provider) {
  if (credentials.access_key.empty() || credentials.secret_key.empty())
    throw Error(ErrorCode::auth,
                fmt::format("{}: the answer lacks an access key id or a secret key", provider));
  // A line break would reach the request as a header of its own; the value is never quoted.
  for (const auto& [value, name] : {std::pair{&credentials.access_key, "access key id"},
                                    std::pair{&credentials.secret_key, "secret key"},
                                    std::pair{&credentials.session_token, "session token"}})
    if (has_control_character(*value))
      throw Error(ErrorCode::auth,
                  fmt::format("{}: the {} holds a control character", provider, name));
  if (credentials.expiration && *credentials.expiration <= AwsClock::now())
    throw Error(ErrorCode::auth, fmt::format("{}: the credentials it gave have expired", provider));
}

}  // namespace ballast
