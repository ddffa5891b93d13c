// RetryPolicy: when and how long to wait before retrying a failed HTTP request: exponential
// backoff with jitter, a server's Retry-After honoured, a bounded number of retries, of which
// fewer may follow a timeout (a server that stalled once is likely to stall again: retrying
// each timeout as often as a refused connection made a stalled server cost many timeouts).
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace ballast {

struct RetryPolicy {
  int max_retries = 5;
  int max_timeout_retries = 1;  // of those, retries after a timeout
  double base_delay_seconds = 0.2;
  double max_delay_seconds = 20.0;
  double max_retry_after_seconds = 60.0;  // a longer Retry-After is cut to this

  // The wait before retry number `retry` (0 = the first retry). A server's Retry-After, when
  // given, replaces the backoff.
  std::chrono::milliseconds delay(int retry, std::optional<double> retry_after) const;
};

// The retries of one operation, counted against a policy.
class RetryBudget {
 public:
  explicit RetryBudget(const RetryPolicy& policy) : policy_(policy) {}
  // Whether another attempt may follow a retry-worthy failure (`timed_out`: a timeout); if so,
  // it is counted.
  bool take(bool timed_out);
  int taken() const { return retries_; }

 private:
  const RetryPolicy& policy_;
  int retries_ = 0, timeouts_ = 0;
};

// 408, 425, 429 and 5xx except 501 and 505: worth retrying.
bool retryable_status(long status);

// Retry-After as seconds: delta-seconds or an HTTP date; nullopt when unparseable.
std::optional<double> parse_retry_after(std::string_view value);

}  // namespace ballast
