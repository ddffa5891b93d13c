// S3 settings from the source, the environment and the AWS shared files (see s3_settings.hpp).
#include "remote/s3_settings.hpp"

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "remote/aws_credential_chain.hpp"
#include "remote/aws_profile.hpp"
#include "util/redact_url.hpp"

namespace ballast {
namespace {

std::string endpoint_url(std::string url) {
  while (url.ends_with('/')) url.pop_back();
  const bool http = url.starts_with("http://") || url.starts_with("https://");
  if (!http || url.find_first_of("?#@ ") != std::string::npos ||
      url.find('/', url.find("://") + 3) == url.find("://") + 3)
    throw Error(ErrorCode::invalid_argument,
                "an S3 endpoint must be an http(s)://host[:port][/path] URL",
                {.actual = redact_url(url)});
  return url;
}

S3Addressing addressing(const std::string& style) {
  if (style.empty() || style == "auto") return S3Addressing::automatic;
  if (style == "path") return S3Addressing::path;
  if (style == "virtual") return S3Addressing::virtual_hosted;
  throw Error(ErrorCode::invalid_argument, "the S3 addressing style must be auto, path or virtual",
              {.actual = style});
}

std::string region_name(std::string region) {
  const bool ok =
      !region.empty() && region.size() <= 64 &&
      region.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
  if (!ok)
    throw Error(ErrorCode::invalid_argument,
                "an S3 region is lowercase letters, digits and '-' (like eu-west-1)",
                {.actual = region});
  return region;
}

template <typename... Candidates>
std::string first_of(const Candidates&... candidates) {
  std::string out;
  ((out.empty() ? void(out = candidates) : void()), ...);
  return out;
}

}  // namespace

S3Settings s3_settings_from_env(const S3Source& source) {
  const AwsProfile profile = load_aws_profile();
  S3Settings s;
  const std::string profile_region = first_of(aws_env("AWS_REGION"), aws_env("AWS_DEFAULT_REGION"),
                                              profile.get("region"), std::string("us-east-1"));
  s.region = region_name(first_of(source.region.value_or(""), profile_region));
  std::string endpoint = first_of(source.endpoint.value_or(""), aws_env("AWS_ENDPOINT_URL_S3"),
                                  aws_env("AWS_ENDPOINT_URL"), profile.get("s3.endpoint_url"),
                                  profile.get("endpoint_url"));
  s.custom_endpoint = !endpoint.empty();
  s.endpoint = s.custom_endpoint ? endpoint_url(endpoint)
                                 : fmt::format("https://s3.{}.amazonaws.com", s.region);
  s.addressing = addressing(
      first_of(aws_env("BALLAST_S3_ADDRESSING_STYLE"), profile.get("s3.addressing_style")));
  if (!aws_no_sign_request())
    s.credentials = aws_default_credentials(profile, region_name(profile_region),
                                            fmt::format("s3://{}/{}", source.bucket, source.key));
  return s;
}

}  // namespace ballast
