// Small requests to AWS credential endpoints (see aws_http.hpp).
#include "remote/aws_http.hpp"

#include <curl/curl.h>

#include <cstdlib>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/error.hpp"
#include "util/redact_url.hpp"

namespace ballast {
namespace {

struct Sink {
  std::string body;
  bool too_large = false;
};

size_t on_write(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t n = size * count;
  if (sink->body.size() + n > kMaxAwsAnswerBytes) {
    sink->too_large = true;
    return 0;  // stops the transfer
  }
  sink->body.append(data, n);
  return n;
}

std::string printable(std::string text) {
  if (text.size() > 200) text.resize(200);
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return text;
}

}  // namespace

std::string aws_xml_field(const std::string& body, std::string_view name) {
  const std::string open = fmt::format("<{}>", name), close = fmt::format("</{}>", name);
  const size_t start = body.find(open);
  if (start == std::string::npos) return {};
  const size_t end = body.find(close, start);
  if (end == std::string::npos) return {};
  return body.substr(start + open.size(), end - start - open.size());
}

AwsCredentials aws_sts_credentials(const std::string& body, const std::string& provider,
                                   const std::string& endpoint) {
  const std::string result = aws_xml_field(body, "Credentials");
  AwsCredentials c{aws_xml_field(result, "AccessKeyId"), aws_xml_field(result, "SecretAccessKey"),
                   aws_xml_field(result, "SessionToken"),
                   parse_aws_time(aws_xml_field(result, "Expiration"))};
  if (!c.expiration)
    throw Error(ErrorCode::auth,
                fmt::format("{}: the answer has no Credentials with an Expiration", provider),
                {.source = redact_url(endpoint)});
  check_aws_credentials(c, provider);
  return c;
}

AwsHttpAnswer aws_http(const AwsHttpRequest& request, const std::string& provider) {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  if (!initialised) throw Error(ErrorCode::network, "libcurl could not be initialised");
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> handle(curl_easy_init(), curl_easy_cleanup);
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(nullptr, curl_slist_free_all);
  if (!handle) throw Error(ErrorCode::network, "libcurl could not make a handle");
  std::map<std::string, std::string> header_values = request.headers;
  const std::string sigv4 = "aws:amz:" + request.signing_scope;
  if (!request.signing_scope.empty()) {
    curl_easy_setopt(handle.get(), CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(handle.get(), CURLOPT_USERNAME, request.signing_keys.access_key.c_str());
    curl_easy_setopt(handle.get(), CURLOPT_PASSWORD, request.signing_keys.secret_key.c_str());
    if (!request.signing_keys.session_token.empty())
      header_values["X-Amz-Security-Token"] = request.signing_keys.session_token;
  }
  for (const auto& [name, value] : header_values)
    headers.reset(curl_slist_append(headers.release(), fmt::format("{}: {}", name, value).c_str()));
  // Not for a signed request: libcurl 7.88 would sign the removal line as a header it never
  // sends (see http_client.cpp); a small body brings no Expect anyway.
  if (request.signing_scope.empty()) headers.reset(curl_slist_append(headers.release(), "Expect:"));
  Sink sink;
  char error[CURL_ERROR_SIZE] = {};
  const long timeout_ms = std::max(1L, static_cast<long>(request.timeout_seconds * 1000));
  CURL* h = handle.get();
  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(h, CURLOPT_NOPROXY,
                   "169.254.169.254,169.254.170.2,169.254.170.23,localhost,"
                   "127.0.0.1,::1,fd00:ec2::23,fd00:ec2::254");
  for (const char* variable : {"AWS_CA_BUNDLE", "BALLAST_CA_BUNDLE", "CURL_CA_BUNDLE"})
    if (const char* bundle = std::getenv(variable); bundle != nullptr && *bundle != '\0') {
      curl_easy_setopt(h, CURLOPT_CAINFO, bundle);
      break;
    }
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (request.method == "POST" || !request.body.empty()) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(request.body.size()));
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &on_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  const CURLcode code = curl_easy_perform(h);
  if (sink.too_large)
    throw Error(ErrorCode::limit_exceeded,
                fmt::format("{}: the answer is larger than {} bytes", provider, kMaxAwsAnswerBytes),
                {.source = redact_url(request.url)});
  if (code != CURLE_OK)
    throw Error(ErrorCode::network,
                fmt::format("{}: request failed: {}", provider,
                            error[0] != '\0' ? error : curl_easy_strerror(code)),
                {.source = redact_url(request.url)});
  AwsHttpAnswer answer;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &answer.status);
  answer.body = std::move(sink.body);
  return answer;
}

std::string aws_error_detail(const std::string& body) {
  std::string code = aws_xml_field(body, "Code"), message = aws_xml_field(body, "Message");
  if (code.empty() && message.empty()) {
    const nlohmann::json json = nlohmann::json::parse(body, nullptr, false);
    if (json.is_object())
      for (const char* key : {"message", "Message"})
        if (auto it = json.find(key); it != json.end() && it->is_string())
          message = it->get<std::string>();
  }
  const std::string detail =
      code.empty() || message.empty() ? code + message : code + ": " + message;
  return detail.empty() ? "" : " (" + printable(detail) + ")";
}

}  // namespace ballast
