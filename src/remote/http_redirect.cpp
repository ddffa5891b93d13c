// Redirect statuses and URL origins (see http_redirect.hpp).
#include "remote/http_redirect.hpp"

#include <curl/curl.h>

#include <cctype>
#include <memory>

namespace ballast {
namespace {

using ParsedUrl = std::unique_ptr<CURLU, decltype(&curl_url_cleanup)>;

// `url` parsed (relative to what `parsed` holds already, if anything); false when it does not.
bool parse_into(const ParsedUrl& parsed, const std::string& url) {
  return parsed && curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0) == CURLUE_OK;
}

// One part of a parsed URL; empty when absent.
std::string url_part(CURLU* url, CURLUPart part, unsigned flags = 0) {
  char* text = nullptr;
  if (curl_url_get(url, part, &text, flags) != CURLUE_OK || text == nullptr) return {};
  std::string out(text);
  curl_free(text);
  return out;
}

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

bool is_redirect_status(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

std::string resolve_location(const std::string& base, const std::string& location) {
  ParsedUrl parsed(curl_url(), &curl_url_cleanup);
  if (!parse_into(parsed, base) || !parse_into(parsed, location)) return {};
  return url_part(parsed.get(), CURLUPART_URL);
}

std::string url_origin(const std::string& url) {
  ParsedUrl parsed(curl_url(), &curl_url_cleanup);
  if (!parse_into(parsed, url)) return {};
  const std::string scheme = lowercase(url_part(parsed.get(), CURLUPART_SCHEME));
  const std::string host = lowercase(url_part(parsed.get(), CURLUPART_HOST));
  const std::string port = url_part(parsed.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT);
  if ((scheme != "http" && scheme != "https") || host.empty() || port.empty()) return {};
  return scheme + "://" + host + ":" + port;
}

}  // namespace ballast
