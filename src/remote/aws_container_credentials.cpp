// Container credentials endpoint (see aws_container_credentials.hpp).
#include "remote/aws_container_credentials.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "remote/aws_http.hpp"
#include "remote/aws_profile.hpp"
#include "util/control_characters.hpp"
#include "util/redact_url.hpp"

namespace ballast {
namespace {

// The host of an http(s) URL: "[::1]" as "::1", without the port; "" when the URL has
// user-info (no endpoint needs it, and it can disguise the host).
std::string url_host(const std::string& url) {
  const size_t start = url.find("://") + 3;
  const std::string authority = url.substr(start, url.find_first_of("/?#", start) - start);
  if (authority.find('@') != std::string::npos) return {};
  if (authority.starts_with('[')) return authority.substr(1, authority.find(']') - 1);
  return authority.substr(0, authority.find(':'));
}

bool allowed_http_host(const std::string& host) {
  if (host == "localhost" || host == "169.254.170.2" || host == "169.254.170.23") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{}, want{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) != 1) return false;
  for (const char* allowed : {"::1", "fd00:ec2::23"})
    if (inet_pton(AF_INET6, allowed, &want) == 1 &&
        std::equal(v6.s6_addr, v6.s6_addr + 16, want.s6_addr))
      return true;
  return false;
}

std::string authorization_token(const std::string& provider) {
  if (std::string file = aws_env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"); !file.empty()) {
    const std::optional<std::string> text = read_small_text_file(file, kMaxAwsAnswerBytes);
    if (!text)
      throw Error(
          ErrorCode::auth,
          fmt::format("{}: AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE does not exist", provider),
          {.source = file});
    std::string token = *text;
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
    return token;
  }
  return aws_env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
}

}  // namespace

std::optional<std::string> aws_container_credentials_url() {
  if (std::string relative = aws_env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"); !relative.empty())
    return "http://169.254.170.2" + (relative.starts_with('/') ? relative : "/" + relative);
  std::string full = aws_env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (full.empty()) return std::nullopt;
  const bool https = full.starts_with("https://");
  if (!https && !(full.starts_with("http://") && allowed_http_host(url_host(full))))
    throw Error(ErrorCode::invalid_argument,
                "AWS_CONTAINER_CREDENTIALS_FULL_URI must be https, or http to a loopback address "
                "or 169.254.170.2, 169.254.170.23 or [fd00:ec2::23]",
                {.actual = redact_url(full)});
  return full;
}

AwsCredentials fetch_container_credentials(const std::string& url, const std::string& provider) {
  AwsHttpRequest request{.url = url, .timeout_seconds = 5};
  if (std::string token = authorization_token(provider); !token.empty()) {
    if (has_control_character(token))
      throw Error(ErrorCode::auth,
                  fmt::format("{}: the authorization token holds a control character", provider));
    request.headers["Authorization"] = token;
  }
  const AwsHttpAnswer answer = aws_http(request, provider);
  if (answer.status != 200)
    throw Error(ErrorCode::auth,
                fmt::format("{}: the endpoint answered HTTP {}{}", provider, answer.status,
                            aws_error_detail(answer.body)),
                {.source = redact_url(url)});
  return aws_credentials_from_json(answer.body, provider, "Token");
}

}  // namespace ballast
