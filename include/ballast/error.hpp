// ballast::Error: the one exception type every ballast function throws.
//
// An Error carries a small code (what kind of failure) plus context (which source, which
// tensor, which byte offset, what was expected and what was found), so a caller can branch on
// the code and a person can read the message. Errors are values: copyable, thread-safe to read.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

namespace ballast {

enum class ErrorCode {
  not_found,         // a file, tensor, object or repository does not exist
  invalid_format,    // the bytes do not follow the format they claim
  unsupported,       // valid, but not something ballast does (yet)
  shape_mismatch,    // a shape disagrees with what the spec or a transformation expects
  dtype_mismatch,    // a dtype disagrees with what the spec or a transformation expects
  io,                // the operating system failed a read, open or map
  network,           // a remote peer could not be reached or broke off
  auth,              // credentials missing or refused
  integrity,         // a checksum or hash does not match
  limit_exceeded,    // a configured bound (size, count, depth) would be crossed
  cancelled,         // the caller stopped a load: a streaming consumer (a TensorCallback, a
                     // Python iterator) that throws it ends load_tensors_streaming with it
  invalid_argument,  // the caller's request itself is malformed (bad dtype name, bad option)
};

// Canonical lowercase name of a code, e.g. "invalid_format".
std::string_view error_code_name(ErrorCode code);

// Where and why an error happened. Every field is optional; empty strings are omitted.
struct ErrorContext {
  std::string source;              // file path, URL or other source description
  std::string tensor;              // tensor name
  std::optional<uint64_t> offset;  // byte offset in the source
  std::string expected;            // what was expected
  std::string actual;              // what was found
};

class Error : public std::exception {
 public:
  Error(ErrorCode code, std::string message, ErrorContext context = {});

  ErrorCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  const ErrorContext& context() const noexcept { return context_; }
  // The full text: "<code>: <message> (source: ..., tensor: ..., offset: ..., ...)".
  const char* what() const noexcept override { return full_.c_str(); }

  // Fill in context fields that are still empty (used as an error travels outwards).
  Error& with_source(std::string_view source);
  Error& with_tensor(std::string_view tensor);

 private:
  void render();

  ErrorCode code_;
  std::string message_;
  ErrorContext context_;
  std::string full_;
};

}  // namespace ballast
