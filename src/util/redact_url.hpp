// URL redaction for messages: a URL's user information and query (which may carry a password,
// a signature or a token) never reach an error message or a log.
#pragma once

#include <string>
#include <string_view>

namespace ballast {

// The URL without user information and without its query: "https://host/a/b?<redacted>".
std::string redact_url(std::string_view url);

}  // namespace ballast
