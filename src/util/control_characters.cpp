// Checks of header text (see control_characters.hpp).
#include "util/control_characters.hpp"

#include <cctype>

#include <fmt/format.h>

#include "ballast/error.hpp"

namespace ballast {

void check_http_headers(const std::map<std::string, std::string>& headers, std::string_view what,
                        const std::string& source) {
  for (const auto& [name, value] : headers) {
    const bool name_ok = !name.empty() && std::ranges::all_of(name, [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) ||
             std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    });
    if (!name_ok)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: '{}' is not an HTTP header name", what, name.substr(0, 64)),
                  {.source = source});
    std::string without_tabs = value;
    std::erase(without_tabs, '\t');
    if (has_control_character(without_tabs))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: the value of '{}' holds a control character", what, name),
                  {.source = source});
  }
}

}  // namespace ballast
