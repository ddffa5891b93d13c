// One S3 object as an HTTP target: its URL (path-style `ENDPOINT/BUCKET/KEY` or
// virtual-hosted `SCHEME://BUCKET.HOST/KEY`, the key percent-encoded as SigV4 canonical URIs
// want), the SigV4 signing (with the settings' credential provider, so each request signs with
// the current credentials and their X-Amz-Security-Token) and X-Amz-Content-SHA256, and
// "s3://bucket/key" as its name in messages. Anonymous settings give unsigned requests.
#pragma once

#include <string>

#include "remote/http_fetch.hpp"
#include "remote/s3_settings.hpp"

namespace ballast {

// Virtual-hosted for S3Addressing::virtual_hosted, and for automatic on AWS's own endpoint
// when the bucket is a DNS label (no dots: a dotted bucket breaks the TLS wildcard).
bool s3_virtual_hosted(const S3Settings& settings, const std::string& bucket);

// Throws invalid_argument for a bucket name S3 would refuse or an empty or too long key.
std::string s3_object_url(const S3Settings& settings, const std::string& bucket,
                          const std::string& key);

HttpTarget s3_target(const S3Settings& settings, const std::string& bucket, const std::string& key);

}  // namespace ballast
