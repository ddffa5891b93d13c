// URL redaction (see redact_url.hpp).
#include "util/redact_url.hpp"

namespace ballast {

std::string redact_url(std::string_view url) {
  const size_t scheme = url.find("://");
  const size_t start = scheme == std::string_view::npos ? 0 : scheme + 3;
  std::string out(url.substr(0, start));
  std::string_view rest = url.substr(start);
  size_t authority_end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, authority_end);
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    out += "<redacted>@";
    rest.remove_prefix(at + 1);
  }
  size_t q = rest.find_first_of("?#");
  out += rest.substr(0, q);
  if (q != std::string_view::npos) out += "?<redacted>";
  return out;
}

}  // namespace ballast
