// ballast::Error: message rendering and context propagation.
#include "ballast/error.hpp"

#include <fmt/format.h>

namespace ballast {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::invalid_format: return "invalid_format";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::shape_mismatch: return "shape_mismatch";
    case ErrorCode::dtype_mismatch: return "dtype_mismatch";
    case ErrorCode::io: return "io";
    case ErrorCode::network: return "network";
    case ErrorCode::auth: return "auth";
    case ErrorCode::integrity: return "integrity";
    case ErrorCode::limit_exceeded: return "limit_exceeded";
    case ErrorCode::cancelled: return "cancelled";
    case ErrorCode::invalid_argument: return "invalid_argument";
  }
  return "unknown";
}

namespace {

// what() is a C string: a NUL byte taken from a file (in a tensor name, say) would end the
// text there, so each one is written as the escape "\x00".
std::string with_nul_bytes_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\0')
      out += "\\x00";
    else
      out += c;
  }
  return out;
}

}  // namespace

Error::Error(ErrorCode code, std::string message, ErrorContext context)
    : code_(code), message_(std::move(message)), context_(std::move(context)) {
  render();
}

Error& Error::with_source(std::string_view source) {
  if (context_.source.empty() && !source.empty()) {
    context_.source = source;
    render();
  }
  return *this;
}

Error& Error::with_tensor(std::string_view tensor) {
  if (context_.tensor.empty() && !tensor.empty()) {
    context_.tensor = tensor;
    render();
  }
  return *this;
}

void Error::render() {
  std::string where;
  auto add = [&where](std::string_view key, std::string_view value) {
    where += where.empty() ? " (" : ", ";
    where += fmt::format("{}: {}", key, value);
  };
  if (!context_.source.empty()) add("source", context_.source);
  if (!context_.tensor.empty()) add("tensor", fmt::format("'{}'", context_.tensor));
  if (context_.offset) add("offset", std::to_string(*context_.offset));
  if (!context_.expected.empty()) add("expected", context_.expected);
  if (!context_.actual.empty()) add("actual", context_.actual);
  if (!where.empty()) where += ")";
  full_ = with_nul_bytes_escaped(fmt::format("{}: {}{}", error_code_name(code_), message_, where));
}

}  // namespace ballast
