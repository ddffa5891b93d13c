// Shared body of the parser fuzz targets: parse the input as a file of one format, validate
// the Index as the loader does, then materialize every tensor (gathers, byte swaps, inflation)
// in read mode (ONNX external data from a fake folder that aborts on any path that could leave
// it). ballast::Error is the expected outcome for bad input; any other exception, crash, leak,
// hang, sanitizer report or broken invariant (an abort) is a bug. Every input that once failed
// is kept in fuzz/regressions/<target>/ and replayed by tests/fuzz_regression_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ballast/parser.hpp"

namespace ballast::fuzz {

// Limits small enough that one input stays fast, large enough to reach every code path.
Limits fuzz_limits();

void parse_and_load(const FormatParser& parser, const uint8_t* data, size_t size);
// Opens `data` as a zip archive and reads every member.
void open_zip(const uint8_t* data, size_t size);
// Parses `data` as a --transform list and plans it against a fixed 3-D f32 tensor.
void plan_transform_text(const uint8_t* data, size_t size);

// Parses `data` as a *.index.json shard map.
void parse_index_json(const uint8_t* data, size_t size);
// Feeds every line of `data` to the HTTP status-line, header, Content-Range, Content-Length and
// Retry-After parsers, checking what they return.
void parse_http_response(const uint8_t* data, size_t size);
// Parses `data` as the Python literal of a .npy header.
void parse_python_literal(const uint8_t* data, size_t size);
// Parses `data` as a GGUF split file name and lists its siblings.
void parse_split_name(const uint8_t* data, size_t size);

// Parses `data` as an AWS credentials/config INI file, checking the bounds of what it stores.
void parse_aws_ini(const uint8_t* data, size_t size);

// Runs the body of the fuzz target `target` ("safetensors", ..., "zip", "transform_syntax",
// "shard_index", "http_response", "py_literal", "gguf_split_name", "aws_ini") on one input: what
// the fuzzers and the regression test share.
void run_target(const std::string& target, const uint8_t* data, size_t size);

}  // namespace ballast::fuzz
