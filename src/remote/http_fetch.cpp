// Retried, checked HTTP operations (see http_fetch.hpp).
#include "remote/http_fetch.hpp"

#include <optional>
#include <thread>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "remote/http_parse.hpp"
#include "util/control_characters.hpp"
#include "util/error_text.hpp"
#include "util/redact_url.hpp"

namespace ballast {
namespace {

void wait_before_retry(const HttpClient& client, const HttpResult& result, int retry) {
  std::optional<double> after;
  if (const std::string* h = result.response.header("retry-after")) after = parse_retry_after(*h);
  std::this_thread::sleep_for(client.settings().retry.delay(retry, after));
}

template <typename Attempt>
HttpResult with_retries(HttpClient& client, Attempt&& attempt) {
  RetryBudget budget(client.settings().retry);
  for (;;) {
    HttpResult result = attempt();
    if (!result.retryable() || !budget.take(result.timed_out())) return result;
    wait_before_retry(client, result, budget.taken() - 1);
  }
}

bool ok_status(const HttpResult& r) {
  return r.curl_code == 0 && r.response.status >= 200 && r.response.status < 300;
}

HttpObjectInfo stat_by_get(HttpClient& client, const HttpTarget& target) {
  HttpRequest request{
      .url = target.url, .headers = target.headers, .range = {{0, 0}}, .signing = target.signing};
  request.on_headers = [](const HttpResponse&) { return false; };  // headers are enough
  HttpResult r = with_retries(client, [&] { return client.perform(request); });
  HttpObjectInfo info;
  info.headers = r.response.headers;
  if (const std::string* etag = r.response.header("etag")) info.etag = *etag;
  const std::string* range = r.response.header("content-range");
  if (r.response.status == 416 && range) {  // an empty object: "bytes */0"
    auto parsed = parse_content_range(*range);
    if (parsed && parsed->total == 0) return info;
  }
  if (r.response.status == 206 && range) {
    auto parsed = parse_content_range(*range);
    if (!parsed || !parsed->total)
      throw Error(ErrorCode::integrity, "unusable Content-Range in the answer to bytes=0-0",
                  {.source = target.name, .actual = *range});
    info.size = *parsed->total;
    return info;
  }
  if (r.response.status == 200) {
    const std::string* length = r.response.header("content-length");
    auto size = length ? parse_http_u64(*length) : std::nullopt;
    if (!size)
      throw Error(ErrorCode::network, "the server states no size (no Content-Length or Range)",
                  {.source = target.name});
    info.size = *size;
    info.ranges = false;
    return info;
  }
  throw_http_error(r, target.name);
}

// The request headers that pin a read to the version of the object seen when it was opened,
// so that a change between the requests of one load fails it instead of mixing two versions:
// If-Match with a strong ETag, else If-Unmodified-Since with its Last-Modified (a weak ETag
// cannot be matched strongly). Without either, the object's size is all there is to check.
HttpHeaders pinned_headers(const HttpTarget& target, const HttpObjectInfo& info) {
  HttpHeaders headers = target.headers;
  if (!info.etag.empty() && !info.etag.starts_with("W/"))
    headers["If-Match"] = info.etag;
  else if (auto it = info.headers.find("last-modified"); it != info.headers.end())
    headers["If-Unmodified-Since"] = it->second;
  return headers;
}

}  // namespace

HttpResult http_perform_retried(HttpClient& client, const HttpRequest& request) {
  return with_retries(client, [&] { return client.perform(request); });
}

HttpTarget make_http_target(std::string url, HttpHeaders headers) {
  std::string name = redact_url(url);
  check_http_headers(headers, "the source's headers", name);
  return {std::move(url), std::move(headers), std::move(name)};
}

HttpObjectInfo http_stat(HttpClient& client, const HttpTarget& target) {
  HttpRequest request{
      .url = target.url, .headers = target.headers, .head = true, .signing = target.signing};
  HttpResult r = with_retries(client, [&] { return client.perform(request); });
  const long status = r.response.status;
  if (ok_status(r)) {
    const std::string* length = r.response.header("content-length");
    if (auto size = length ? parse_http_u64(*length) : std::nullopt) {
      HttpObjectInfo info;
      info.size = *size;
      info.headers = r.response.headers;
      if (const std::string* etag = r.response.header("etag")) info.etag = *etag;
      if (const std::string* ranges = r.response.header("accept-ranges"))
        info.ranges = *ranges != "none";
      return info;
    }
    return stat_by_get(client, target);
  }
  // Some servers (and presigned URLs) refuse HEAD but serve GET; and a HEAD answer has no body
  // to say why (S3's NoSuchKey or NoSuchBucket, SignatureDoesNotMatch), a GET's has.
  if (r.curl_code == 0 &&
      (status == 400 || status == 403 || status == 404 || status == 405 || status == 501))
    return stat_by_get(client, target);
  throw_http_error(r, target.name);
}

bool http_exists(HttpClient& client, const HttpTarget& target) {
  try {
    http_stat(client, target);
    return true;
  } catch (const Error& e) {
    if (e.code() == ErrorCode::not_found) return false;
    throw;
  }
}

bool has_validator(const HttpObjectInfo& info) {
  return !info.etag.empty() || info.headers.contains("last-modified");
}

void http_stream(HttpClient& client, const HttpTarget& target, const HttpObjectInfo& info,
                 uint64_t offset, uint64_t length, const ByteSink& sink, bool* ranges_ignored,
                 bool resumable) {
  if (length == 0) return;
  if (offset > info.size || length > info.size - offset)
    throw Error(ErrorCode::invalid_format, past_end_message(length, info.size, "object"),
                {.source = target.name, .offset = offset});
  uint64_t done = 0;  // bytes delivered to the sink; a retry resumes after them
  bool use_ranges = info.ranges;
  RetryBudget budget(client.settings().retry);
  for (;;) {
    const uint64_t first = offset + done, last = offset + length - 1;
    const uint64_t done_before = done;
    const uint64_t want = last - first + 1;
    bool whole = false;     // a 200: the body starts at byte 0 of the object
    uint64_t position = 0;  // bytes of the body seen so far
    std::optional<Error> verdict;
    auto fail = [&](ErrorCode code, std::string message, std::string actual = {}) {
      verdict = Error(code, std::move(message),
                      {.source = target.name, .offset = first, .actual = std::move(actual)});
      return false;
    };
    HttpRequest request{
        .url = target.url, .headers = pinned_headers(target, info), .signing = target.signing};
    if (use_ranges)
      request.range = {{first, last}};
    else
      request.expected_bytes = last + 1;
    request.on_headers = [&](const HttpResponse& response) {
      const std::string* etag = response.header("etag");
      if (etag && !info.etag.empty() && *etag != info.etag)
        return fail(ErrorCode::integrity, "the object changed while it was being read", *etag);
      const std::string* modified = response.header("last-modified");
      const auto opened_modified = info.headers.find("last-modified");
      if (!etag && modified && opened_modified != info.headers.end() &&
          *modified != opened_modified->second)
        return fail(ErrorCode::integrity, "the object changed while it was being read", *modified);
      const std::string* length_header = response.header("content-length");
      // A sentinel rather than std::optional: GCC 12 at -O3 reports a false
      // -Wmaybe-uninitialized on an optional read inside fmt::format here.
      constexpr uint64_t kNoLength = ~uint64_t{0};
      const uint64_t body_length =
          length_header ? parse_http_u64(*length_header).value_or(kNoLength) : kNoLength;
      if (response.status == 206) {
        const std::string* range = response.header("content-range");
        auto parsed = range ? parse_content_range(*range) : std::nullopt;
        if (!parsed || parsed->first != first || parsed->last != last ||
            (parsed->total && *parsed->total != info.size))
          return fail(ErrorCode::integrity,
                      fmt::format("the server answered a different range than bytes {}-{}/{}",
                                  first, last, info.size),
                      range ? *range : "no Content-Range");
        if (body_length != kNoLength && body_length != want)
          return fail(ErrorCode::integrity,
                      fmt::format("Content-Length {} for a {}-byte range", body_length, want));
        return true;
      }
      if (response.status != 200)
        return fail(ErrorCode::network, fmt::format("unexpected HTTP {}", response.status));
      if (body_length != kNoLength && body_length != info.size)
        return fail(ErrorCode::integrity,
                    fmt::format("the object is now {} bytes, not {}", body_length, info.size));
      whole = true;
      if (ranges_ignored) *ranges_ignored = true;
      return true;
    };
    request.on_body = [&](std::span<const std::byte> bytes) {
      if (whole) {  // skip to `first`, keep up to `last`
        const uint64_t begin = position, end = position + bytes.size();
        position = end;
        if (end <= first) return true;
        const uint64_t from = std::max(begin, first) - begin;
        const uint64_t to = std::min(end, last + 1) - begin;
        sink(bytes.subspan(from, to - from));
        done += to - from;
        return offset + done <= last;  // stop once the range is complete
      }
      if (position + bytes.size() > want)
        return fail(ErrorCode::integrity, "the server sent more bytes than requested");
      position += bytes.size();
      sink(bytes);
      done += bytes.size();
      return true;
    };
    HttpResult result = client.perform(request);
    if (verdict) throw *verdict;
    if (result.curl_code == 0 && result.response.status == 412)
      throw Error(ErrorCode::integrity,
                  "the object changed while it was being read (412: it no longer matches the "
                  "version the load opened)",
                  {.source = target.name, .offset = first});
    if (done == length) return;
    if (whole) use_ranges = false;
    const bool short_body = result.curl_code == 0 && result.response.status / 100 == 2;
    // A timeout after progress counts as a dropped connection, not as a stalled server.
    const bool stalled = result.timed_out() && done == done_before;
    if ((short_body || result.retryable()) && (resumable || done == 0) && budget.take(stalled)) {
      wait_before_retry(client, result, budget.taken() - 1);
      continue;
    }
    if (short_body)
      throw Error(ErrorCode::network,
                  fmt::format("the connection ended after {} of {} bytes", done, length),
                  {.source = target.name, .offset = offset});
    throw_http_error(result, target.name);
  }
}

std::vector<std::byte> http_get_small(HttpClient& client, const HttpTarget& target,
                                      uint64_t max_bytes) {
  std::vector<std::byte> body;
  bool too_large = false;
  HttpRequest request{.url = target.url,
                      .headers = target.headers,
                      .expected_bytes = max_bytes,
                      .signing = target.signing};
  request.on_headers = [&](const HttpResponse& response) {  // refused before its body
    const std::string* length = response.header("content-length");
    too_large = length && parse_http_u64(*length).value_or(0) > max_bytes;
    return !too_large;
  };
  request.on_body = [&](std::span<const std::byte> bytes) {  // a body without Content-Length
    too_large = bytes.size() > max_bytes - body.size();
    if (!too_large) body.insert(body.end(), bytes.begin(), bytes.end());
    return !too_large;
  };
  HttpResult r = with_retries(client, [&] {
    body.clear();
    return client.perform(request);
  });
  if (too_large)
    throw Error(ErrorCode::limit_exceeded,
                limit_message("file size", std::nullopt, "max_header_bytes", max_bytes),
                {.source = target.name});
  if (!ok_status(r)) throw_http_error(r, target.name);
  return body;
}

}  // namespace ballast
