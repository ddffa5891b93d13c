// ONNX external data: a TensorProto with data_location = EXTERNAL keeps its bytes in another
// file, named by the key/value entries `location` (a path relative to the model's folder),
// `offset` (default 0), `length` (default: from offset to the end of the file) and `checksum`
// (the SHA-1 hex digest of the whole file named by `location`). With verify_checksums, each
// file that carries a checksum is read once, whole, and a mismatch fails with `integrity`.
//
// Rules: the location must be relative, without `..` and (the opener enforces this) must not
// resolve through a symlink out of the folder; offset + length must lie inside the file; an
// explicit length must equal the tensor's byte size (0 is an empty tensor, never "to the end");
// without a length, the file from offset to its end must be exactly the tensor. Each file is
// opened once per parse, through ParseContext::open_sibling.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "ballast/parser.hpp"

namespace ballast {

struct ExternalData {
  std::string location;
  std::optional<uint64_t> offset;
  std::optional<uint64_t> length;
  std::optional<std::string> checksum;
};

class ExternalFiles {
 public:
  // `model` names the model file in errors; `opener` may be null (then any use is an error).
  ExternalFiles(SiblingOpener opener, std::string model, bool verify_checksums);

  // The `nbytes` bytes `data` refers to, as a slice of its file. Throws invalid_format for a
  // refused location or a range that does not fit, not_found for a missing file and
  // unsupported when the model has no folder.
  std::shared_ptr<ByteSource> slice(const ExternalData& data, uint64_t nbytes);

 private:
  std::shared_ptr<ByteSource> open(const std::string& location);
  void verify(const ByteSource& file, const std::string& location, const std::string& checksum);

  SiblingOpener opener_;
  std::string model_;
  bool verify_checksums_;
  std::map<std::string, std::string> verified_;  // location -> checksum already checked
  std::map<std::string, std::shared_ptr<ByteSource>> files_;
};

}  // namespace ballast
