// parse_source_uri: a checkpoint named by one string, the way the CLI's SOURCE argument and the
// Python package take it: a local path, http(s)://URL, hf://[org/]repo[:QUANT][@rev][/path] or
// s3://bucket/key. A repo id without an organisation is hf://gpt2 or, with a path,
// hf://gpt2@main/config.json; :QUANT is a GGUF quantization tag (HuggingFaceSource::quant_tag).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ballast/source.hpp"

namespace ballast {

// Throws Error(invalid_argument) for a malformed hf:// or s3:// name, and when an S3 region or
// endpoint is given for a source that is not s3://. Anything that is not a URL is a path.
WeightSource parse_source_uri(std::string_view text,
                              std::optional<std::string> s3_region = std::nullopt,
                              std::optional<std::string> s3_endpoint = std::nullopt);

}  // namespace ballast
