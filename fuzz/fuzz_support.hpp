// Shared body of the parser fuzz targets: parse the input as a file of one format, validate
// the Index as the loader does, then materialize every tensor (gathers, byte swaps, inflation)
// in read mode. ballast::Error is the expected outcome for bad input; any other exception,
// crash, leak, hang or sanitizer report is a bug. Every input that once failed is kept in
// fuzz/regressions/<target>/ and replayed by tests/fuzz_regression_test.cpp.
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

// Runs the body of the fuzz target `target` ("safetensors", ..., "zip", "transform_syntax")
// on one input: what the fuzzers and the regression test share.
void run_target(const std::string& target, const uint8_t* data, size_t size);

}  // namespace ballast::fuzz
