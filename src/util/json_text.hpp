// JSON text of values that quote a file's or a server's bytes (names, metadata, ETags), which
// need not be UTF-8: bytes that are not become U+FFFD, where nlohmann's plain dump() would
// throw type_error from the middle of a parse.
#pragma once

#include <string>

namespace ballast {

template <typename Json>
std::string lossy_json_text(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace ballast
