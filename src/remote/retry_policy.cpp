// Backoff and Retry-After rules (see retry_policy.hpp).
#include "remote/retry_policy.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <random>
#include <string>

namespace ballast {

std::chrono::milliseconds RetryPolicy::delay(int retry, std::optional<double> retry_after) const {
  double seconds;
  if (retry_after) {
    seconds = std::clamp(*retry_after, 0.0, max_retry_after_seconds);
  } else {
    // "Equal jitter": half the exponential step fixed, half random, so that many clients
    // retrying at once spread out but none retries immediately.
    double step = std::min(max_delay_seconds, base_delay_seconds * std::ldexp(1.0, retry));
    thread_local std::mt19937 random{std::random_device{}()};
    seconds = step / 2 + std::uniform_real_distribution<double>(0, step / 2)(random);
  }
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

bool RetryBudget::take(bool timed_out) {
  if (retries_ >= policy_.max_retries) return false;
  if (timed_out && timeouts_ >= policy_.max_timeout_retries) return false;
  ++retries_;
  timeouts_ += timed_out ? 1 : 0;
  return true;
}

bool retryable_status(long status) {
  if (status == 408 || status == 425 || status == 429) return true;
  return status >= 500 && status <= 599 && status != 501 && status != 505;
}

std::optional<double> parse_retry_after(std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  uint64_t seconds = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec == std::errc() && end == value.data() + value.size()) return static_cast<double>(seconds);
  time_t when = curl_getdate(std::string(value).c_str(), nullptr);
  if (when < 0) return std::nullopt;
  return std::max(0.0, std::difftime(when, std::time(nullptr)));
}

}  // namespace ballast
