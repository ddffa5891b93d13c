// HttpClient: one libcurl-based HTTP(S) client shared by every remote source of a loader. It
// keeps a pool of easy handles (each keeps its connections alive, so requests reuse them) and a
// share handle for DNS and TLS sessions; HTTP/2 is negotiated over TLS, HTTP/1.1 otherwise.
// `perform` is one attempt; the retried operations are in http_fetch.hpp. Requests may be
// signed with AWS Signature V4 (libcurl's CURLOPT_AWS_SIGV4). Thread-safe.
//
// Redirects are followed here, not by libcurl (http and https only, at most kMaxRedirects):
// within the request's origin (scheme, host and port) every header goes along and a signed
// request is signed again for the new URL; once a redirect leaves the origin, none of the
// caller's headers (per request or default: Authorization, cookies, tokens, API keys, X-Amz-*)
// goes along, to that hop or any later one, and a signed request is refused there instead.
//
// What a server sends is bounded: headers (kMaxResponseHeaderBytes per request, interim
// responses included, at most kMaxInterimResponses of those), bodies ballast does not need
// (error and redirect bodies: their first max_body_bytes are kept, the rest is not read),
// progress (the stall timeout) and time: each attempt has a deadline of the timeout plus its
// expected body at kSlowestBytesPerSecond.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "remote/aws_credential_provider.hpp"
#include "remote/retry_policy.hpp"

namespace ballast {

using HttpHeaders = std::map<std::string, std::string>;

inline constexpr size_t kMaxResponseHeaderBytes = 256 << 10;
inline constexpr int kMaxInterimResponses = 8;
inline constexpr double kSlowestBytesPerSecond = 32 << 10;

struct HttpSettings {
  // The connect timeout, the longest time without progress, and the fixed part of a request's
  // deadline.
  double timeout_seconds = 300.0;
  std::string ca_bundle;  // empty: libcurl's default
  bool verify_tls = true;
  RetryPolicy retry;
  HttpHeaders default_headers;  // overridden by a request's own headers of the same name
};

// AWS Signature V4 for a request: libcurl signs the method, path, query, Host, X-Amz-Date and
// every custom header (so X-Amz-Content-SHA256 and X-Amz-Security-Token, which is added from
// the credentials). libcurl 7.88 hashes the (empty) request body itself, so
// X-Amz-Content-SHA256 must be the empty body's sha256, not UNSIGNED-PAYLOAD. Each request
// (each hop) asks the provider for its current credentials (refreshed before they expire);
// they are secrets: never printed, only the provider's description is.
struct AwsSigning {
  std::string region;
  std::string service;
  std::shared_ptr<AwsCredentialProvider> credentials;
};

struct HttpResponse {
  long status = 0;
  HttpHeaders headers;  // of the final response (after redirects), names in lowercase
  std::string body;     // the head of error bodies, and bodies with no on_body sink

  const std::string* header(const std::string& lowercase_name) const;
};

struct HttpRequest {
  std::string url;
  HttpHeaders headers;
  bool head = false;
  bool follow_redirects = true;
  std::optional<std::pair<uint64_t, uint64_t>> range;  // inclusive byte range
  uint64_t max_body_bytes = 16 << 10;                  // for bodies kept in HttpResponse::body
  // The body the request should bring when it has no range (sizes its deadline).
  uint64_t expected_bytes = 0;
  // Called before the first body byte of a 2xx response; return false to stop the transfer.
  std::function<bool(const HttpResponse&)> on_headers;
  // Receives the body of a 2xx response; return false to stop. Null: kept in `body`.
  std::function<bool(std::span<const std::byte>)> on_body;
  std::shared_ptr<const AwsSigning> signing;  // null: unsigned
};

struct HttpResult {
  HttpResponse response;
  int curl_code = 0;           // CURLcode; 0 = the transfer completed
  std::string error;           // libcurl's message when curl_code != 0
  bool stopped_by_us = false;  // a callback returned false
  // Why the answer was refused (too many interim responses or redirects, headers too large, a
  // signed request redirected to another origin); never retried. Empty when it was not.
  std::string refused;
  // Where the credentials of a signed request came from (AwsCredentialProvider::description),
  // named when the server refuses them; empty for an unsigned request.
  std::string signed_with;
  // Retry-worthy: a connection failure or timeout, or a retryable status.
  bool retryable() const;
  bool timed_out() const;  // the stall timeout or the deadline
};

class HttpClient {
 public:
  explicit HttpClient(HttpSettings settings);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  const HttpSettings& settings() const { return settings_; }
  // One attempt (following redirects); HTTP error statuses are results, not exceptions.
  HttpResult perform(const HttpRequest& request);

 private:
  // One hop to `url`; `with_credentials` false leaves the caller's headers behind. Sets
  // `location` to the absolute URL a Location header names.
  HttpResult perform_hop(const HttpRequest& request, const std::string& url, bool with_credentials,
                         std::string& location);

  void* acquire();
  void release(void* handle);

  HttpSettings settings_;
  void* share_ = nullptr;
  std::mutex share_locks_[8];
  std::mutex pool_mutex_;
  std::vector<void*> pool_;

  friend struct ShareLock;
};

// The Error a failed result stands for: not_found (404, 410), auth (401, 403), invalid_format
// (416), network otherwise (a refused answer included). `what` names the object (already redacted).
// Never includes header values; for S3-style XML errors it adds the <Code> and <Message>, and
// for a refused signed request (401, 403) where its credentials came from.
[[noreturn]] void throw_http_error(const HttpResult& result, const std::string& what);

}  // namespace ballast
