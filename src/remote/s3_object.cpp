// S3 object URLs and signed targets (see s3_object.hpp).
#include "remote/s3_object.hpp"

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "remote/url.hpp"

namespace ballast {
namespace {

// The sha256 of an empty body: what libcurl 7.88 puts in the canonical request of a GET or
// HEAD (see AwsSigning), so the header must say the same.
constexpr const char* kEmptyBodySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

void check_names(const std::string& bucket, const std::string& key) {
  const std::string where = fmt::format("s3://{}/{}", bucket, key);
  const bool bucket_ok =
      bucket.size() >= 3 && bucket.size() <= 63 &&
      bucket.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-_") == std::string::npos;
  if (!bucket_ok)
    throw Error(ErrorCode::invalid_argument,
                "an S3 bucket name is 3 to 63 lowercase letters, digits, '.', '-' or '_'",
                {.source = where});
  if (key.empty() || key.size() > 1024)
    throw Error(ErrorCode::invalid_argument, "an S3 key is 1 to 1024 bytes", {.source = where});
}

}  // namespace

bool s3_virtual_hosted(const S3Settings& settings, const std::string& bucket) {
  if (settings.addressing != S3Addressing::automatic)
    return settings.addressing == S3Addressing::virtual_hosted;
  return !settings.custom_endpoint && bucket.find_first_of("._") == std::string::npos;
}

std::string s3_object_url(const S3Settings& settings, const std::string& bucket,
                          const std::string& key) {
  check_names(bucket, key);
  const std::string quoted_key = url_quote(key, true);
  if (!s3_virtual_hosted(settings, bucket))
    return fmt::format("{}/{}/{}", settings.endpoint, bucket, quoted_key);
  const size_t host = settings.endpoint.find("://") + 3;
  return fmt::format("{}{}.{}/{}", settings.endpoint.substr(0, host), bucket,
                     settings.endpoint.substr(host), quoted_key);
}

HttpTarget s3_target(const S3Settings& settings, const std::string& bucket,
                     const std::string& key) {
  HttpTarget target{.url = s3_object_url(settings, bucket, key),
                    .name = fmt::format("s3://{}/{}", bucket, key)};
  if (settings.credentials) {
    target.headers["x-amz-content-sha256"] = kEmptyBodySha256;
    target.signing =
        std::make_shared<const AwsSigning>(AwsSigning{settings.region, "s3", settings.credentials});
  }
  return target;
}

}  // namespace ballast
