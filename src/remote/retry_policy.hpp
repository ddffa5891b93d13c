// RetryPolicy: when and how long to wait before retrying a failed HTTP request: exponential
// backoff with jitter, a server's Retry-After honoured, a bounded number of retries.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace ballast {

struct RetryPolicy {
  int max_retries = 5;
  double base_delay_seconds = 0.2;
  double max_delay_seconds = 20.0;
  double max_retry_after_seconds = 60.0;  // a longer Retry-After is cut to this

  // The wait before retry number `retry` (0 = the first retry). A server's Retry-After, when
  // given, replaces the backoff.
  std::chrono::milliseconds delay(int retry, std::optional<double> retry_after) const;
};

// 408, 425, 429 and 5xx except 501 and 505: worth retrying.
bool retryable_status(long status);

// Retry-After as seconds: delta-seconds or an HTTP date; nullopt when unparseable.
std::optional<double> parse_retry_after(std::string_view value);

}  // namespace ballast
