// Redirects, which HttpClient follows itself: which statuses redirect, how many hops a request
// may take, and the origin (scheme, host, port) a URL belongs to — what decides whether the
// caller's headers and signature may go along to the next hop.
#pragma once

#include <string>

namespace ballast {

inline constexpr int kMaxRedirects = 10;

// 301, 302, 303, 307 and 308.
bool is_redirect_status(long status);

// The absolute URL a Location header names, resolved against the URL it answered; empty when
// it does not parse.
std::string resolve_location(const std::string& base, const std::string& location);

// "scheme://host:port" in lowercase, the scheme's default port filled in; empty when `url` is
// not an absolute http(s) URL.
std::string url_origin(const std::string& url);

}  // namespace ballast
