// libcurl HTTP client (see http_client.hpp).
#include "remote/http_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <exception>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "remote/http_parse.hpp"
#include "remote/http_redirect.hpp"
#include "util/redact_url.hpp"

namespace ballast {

struct ShareLock {
  static void lock(CURL*, curl_lock_data data, curl_lock_access, void* user) {
    static_cast<HttpClient*>(user)->share_locks_[static_cast<size_t>(data) % 8].lock();
  }
  static void unlock(CURL*, curl_lock_data data, void* user) {
    static_cast<HttpClient*>(user)->share_locks_[static_cast<size_t>(data) % 8].unlock();
  }
};

namespace {

void global_init() {
  static const bool done = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; }();
  if (!done) throw Error(ErrorCode::network, "libcurl could not be initialised");
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Per-transfer state the libcurl callbacks see.
struct Transfer {
  const HttpRequest* request;
  HttpResult result;
  bool headers_checked = false;
  bool body_cut = false;    // a body ballast does not need reached max_body_bytes: not read on
  size_t header_bytes = 0;  // all header lines so far, interim responses included
  int interim = 0;          // 1xx responses so far
  // What a callback threw (a sink's ENOSPC, an integrity check): an exception must not unwind
  // through libcurl's C frames, so the transfer is stopped and it is raised after cleanup.
  std::exception_ptr callback_error;

  // Stops the transfer (a callback's 0) with the reason the answer is refused.
  size_t refuse(std::string why) {
    result.refused = std::move(why);
    return 0;
  }

  bool success_status() const {
    return result.response.status >= 200 && result.response.status < 300;
  }
};

// Runs a libcurl callback's body: what it throws stops the transfer and is kept for later.
template <typename Body>
size_t guarded(Transfer* t, Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    t->callback_error = std::current_exception();
    t->result.stopped_by_us = true;
    return 0;
  }
}

size_t header_line(Transfer* t, char* data, size_t size, size_t count) {
  std::string_view line(data, size * count);
  t->header_bytes += line.size();
  if (t->header_bytes > kMaxResponseHeaderBytes)
    return t->refuse(
        fmt::format("response headers larger than {} KiB", kMaxResponseHeaderBytes >> 10));
  if (line.starts_with("HTTP/")) {  // a new response (after a 1xx interim response)
    t->result.response.headers.clear();
    t->result.response.status = parse_http_status_line(line);
    if (t->result.response.status / 100 == 1 && ++t->interim > kMaxInterimResponses)
      return t->refuse(fmt::format("more than {} interim (1xx) responses", kMaxInterimResponses));
    return size * count;
  }
  if (auto header = parse_http_header_line(line))
    t->result.response.headers[std::move(header->first)] = std::move(header->second);
  return size * count;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  return guarded(t, [&] { return header_line(t, data, size, count); });
}

size_t body_bytes(Transfer* t, char* data, size_t size, size_t count) {
  const size_t n = size * count;
  const HttpRequest& request = *t->request;
  if (!t->success_status() || !request.on_body) {
    std::string& body = t->result.response.body;
    if (body.size() + n > request.max_body_bytes) {
      if (t->success_status()) {  // a kept body larger than allowed
        t->result.stopped_by_us = true;
        return 0;
      }
      // An error or redirect body: keep its head, read no more of it.
      body.append(data, request.max_body_bytes - body.size());
      t->body_cut = true;
      return 0;
    }
    body.append(data, n);
    return n;
  }
  if (!t->headers_checked) {
    t->headers_checked = true;
    if (request.on_headers && !request.on_headers(t->result.response)) {
      t->result.stopped_by_us = true;
      return 0;
    }
  }
  if (!request.on_body(std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), n))) {
    t->result.stopped_by_us = true;
    return 0;
  }
  return n;
}

size_t on_write(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  return guarded(t, [&] { return body_bytes(t, data, size, count); });
}

}  // namespace

const std::string* HttpResponse::header(const std::string& lowercase_name) const {
  auto it = headers.find(lowercase_name);
  return it == headers.end() ? nullptr : &it->second;
}

bool HttpResult::timed_out() const { return curl_code == CURLE_OPERATION_TIMEDOUT; }

bool HttpResult::retryable() const {
  if (stopped_by_us || !refused.empty()) return false;
  switch (curl_code) {
    case CURLE_OK: return retryable_status(response.status);
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR: return true;
    default: return false;
  }
}

HttpClient::HttpClient(HttpSettings settings) : settings_(std::move(settings)) {
  global_init();
  share_ = curl_share_init();
  if (share_ != nullptr) {
    curl_share_setopt(share_, CURLSHOPT_LOCKFUNC, &ShareLock::lock);
    curl_share_setopt(share_, CURLSHOPT_UNLOCKFUNC, &ShareLock::unlock);
    curl_share_setopt(share_, CURLSHOPT_USERDATA, this);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  }
}

HttpClient::~HttpClient() {
  for (void* handle : pool_) curl_easy_cleanup(static_cast<CURL*>(handle));
  if (share_ != nullptr) curl_share_cleanup(share_);
}

void* HttpClient::acquire() {
  {
    std::lock_guard lock(pool_mutex_);
    if (!pool_.empty()) {
      void* handle = pool_.back();
      pool_.pop_back();
      return handle;
    }
  }
  CURL* handle = curl_easy_init();
  if (handle == nullptr) throw Error(ErrorCode::network, "libcurl could not create a handle");
  return handle;
}

void HttpClient::release(void* handle) {
  // Reset keeps the handle's live connections, DNS and TLS session caches.
  curl_easy_reset(static_cast<CURL*>(handle));
  std::lock_guard lock(pool_mutex_);
  pool_.push_back(handle);
}

HttpResult HttpClient::perform(const HttpRequest& request) {
  const std::string origin = url_origin(request.url);
  std::string url = request.url;
  bool with_credentials = true;  // false from the first hop that leaves the origin on
  for (int redirects = 0;; ++redirects) {
    std::string location;
    HttpResult result = perform_hop(request, url, with_credentials, location);
    if (!request.follow_redirects || result.curl_code != CURLE_OK ||
        !is_redirect_status(result.response.status) || location.empty())
      return result;
    const std::string next_origin = url_origin(location);
    if (redirects == kMaxRedirects)
      result.refused = fmt::format("more than {} redirects", kMaxRedirects);
    else if (next_origin.empty())
      result.refused = fmt::format("a redirect to {}, not an http(s) URL", redact_url(location));
    else if (next_origin != origin && request.signing)
      result.refused = fmt::format(
          "a signed request is not sent on to another origin (a redirect to {}); set the "
          "bucket's region or endpoint",
          redact_url(location));
    if (!result.refused.empty()) return result;
    with_credentials = with_credentials && next_origin == origin;
    url = std::move(location);
  }
}

HttpResult HttpClient::perform_hop(const HttpRequest& request, const std::string& url,
                                   bool with_credentials, std::string& location) {
  // The current credentials, before a handle is taken: refreshing them may fail.
  std::optional<AwsCredentials> keys;
  if (request.signing && with_credentials) keys = request.signing->credentials->current();
  CURL* handle = static_cast<CURL*>(acquire());
  Transfer transfer{&request, {}};
  char error[CURL_ERROR_SIZE] = {};

  HttpHeaders merged;
  if (with_credentials) merged = settings_.default_headers;
  for (const auto& [name, value] : with_credentials ? request.headers : HttpHeaders{}) {
    const std::string key = lowercase(name);  // clang 14 cannot capture a structured binding
    std::erase_if(merged, [&](const auto& kv) { return lowercase(kv.first) == key; });
    merged[name] = value;
  }
  if (keys && !keys->session_token.empty()) {  // the current token, whatever a caller set
    std::erase_if(merged,
                  [](const auto& kv) { return lowercase(kv.first) == "x-amz-security-token"; });
    merged["x-amz-security-token"] = keys->session_token;
  }
  curl_slist* header_list = nullptr;
  for (const auto& [name, value] : merged)
    header_list = curl_slist_append(header_list, fmt::format("{}: {}", name, value).c_str());
  // libcurl would otherwise send "Expect: 100-continue" and "Accept: */*" variations; keep the
  // request minimal and predictable. Not for a signed request: libcurl 7.88's SigV4 signs the
  // removal line "Expect:" as a header "expect" that is never sent (S3 then refuses the
  // signature), and requests without a body send no Expect anyway.
  if (!request.signing) header_list = curl_slist_append(header_list, "Expect:");

  const long timeout_ms = std::max(1L, static_cast<long>(settings_.timeout_seconds * 1000));
  const long stall_seconds = std::max(1L, static_cast<long>(std::ceil(settings_.timeout_seconds)));
  const uint64_t body_bytes =
      request.range ? request.range->second - request.range->first + 1 : request.expected_bytes;
  const double deadline_ms =
      std::min(1e12, static_cast<double>(timeout_ms) +
                         static_cast<double>(body_bytes) / kSlowestBytesPerSecond * 1000);
  curl_easy_setopt(handle, CURLOPT_URL, url.c_str());
  curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(handle, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(deadline_ms));
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_TIME, stall_seconds);
  curl_easy_setopt(handle, CURLOPT_SSL_VERIFYPEER, settings_.verify_tls ? 1L : 0L);
  curl_easy_setopt(handle, CURLOPT_SSL_VERIFYHOST, settings_.verify_tls ? 2L : 0L);
  if (!settings_.ca_bundle.empty())
    curl_easy_setopt(handle, CURLOPT_CAINFO, settings_.ca_bundle.c_str());
  if (share_ != nullptr) curl_easy_setopt(handle, CURLOPT_SHARE, share_);
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, header_list);
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(handle, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, &on_write);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &transfer);
  if (request.head) curl_easy_setopt(handle, CURLOPT_NOBODY, 1L);
  std::string sigv4;
  if (keys) {
    const AwsSigning& aws = *request.signing;
    sigv4 = fmt::format("aws:amz:{}:{}", aws.region, aws.service);
    curl_easy_setopt(handle, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(handle, CURLOPT_USERNAME, keys->access_key.c_str());
    curl_easy_setopt(handle, CURLOPT_PASSWORD, keys->secret_key.c_str());
  }
  std::string range;
  if (request.range) {
    range = fmt::format("{}-{}", request.range->first, request.range->second);
    curl_easy_setopt(handle, CURLOPT_RANGE, range.c_str());
  }

  CURLcode code = curl_easy_perform(handle);
  curl_slist_free_all(header_list);
  HttpResult result = std::move(transfer.result);
  if (keys) result.signed_with = request.signing->credentials->description();
  if (transfer.body_cut && code == CURLE_WRITE_ERROR) code = CURLE_OK;  // the status stands
  result.curl_code = code;
  if (code != CURLE_OK) result.error = error[0] != '\0' ? error : curl_easy_strerror(code);
  long status = 0;
  if (curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status != 0)
    result.response.status = status;
  if (const std::string* named = result.response.header("location"))
    location = resolve_location(url, *named);
  release(handle);
  if (transfer.callback_error) std::rethrow_exception(transfer.callback_error);
  return result;
}

namespace {

// <Tag>text</Tag> from an XML error body (S3), bounded.
std::string xml_field(const std::string& body, std::string_view tag) {
  const std::string open = fmt::format("<{}>", tag), close = fmt::format("</{}>", tag);
  size_t start = body.find(open);
  if (start == std::string::npos) return {};
  start += open.size();
  size_t end = body.find(close, start);
  if (end == std::string::npos) return {};
  return body.substr(start, std::min<size_t>(end - start, 200));
}

}  // namespace

void throw_http_error(const HttpResult& result, const std::string& what) {
  if (!result.refused.empty())
    throw Error(ErrorCode::network,
                fmt::format("the server's answer was refused: {}", result.refused),
                {.source = what});
  if (result.curl_code != CURLE_OK && !result.stopped_by_us)
    throw Error(ErrorCode::network, fmt::format("request failed: {}", result.error),
                {.source = what});
  const long status = result.response.status;
  std::string detail;
  if (std::string code = xml_field(result.response.body, "Code"); !code.empty()) {
    detail = fmt::format(" ({}", code);
    if (std::string message = xml_field(result.response.body, "Message"); !message.empty())
      detail += ": " + message;
    detail += ")";
  }
  ErrorCode code = ErrorCode::network;
  if (status == 404 || status == 410) code = ErrorCode::not_found;
  if (status == 401 || status == 403) {
    code = ErrorCode::auth;
    if (!result.signed_with.empty()) detail += fmt::format(", signed with {}", result.signed_with);
  }
  if (status == 416) code = ErrorCode::invalid_format;
  throw Error(code, fmt::format("HTTP {}{}", status, detail), {.source = what});
}

}  // namespace ballast
