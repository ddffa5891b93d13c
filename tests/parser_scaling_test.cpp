// Every parser's work is linear in its input (issue 30): GGUF metadata keys and tensor infos,
// torch zip and legacy storages, npz members, safetensors header entries, ONNX initializers.
// Operations, not seconds, are counted: parsers count their units of work and every key comparison
// their lookups make (OpCounter, util/op_count.hpp), so a duplicate check or lookup that re-scans
// what came before shows up as 100x the count for 10x the input. Each case parses n and 10n items
// and allows 12x.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>

#include "formats/gguf/gguf_parser.hpp"
#include "formats/numpy/numpy_parser.hpp"
#include "formats/onnx/onnx_parser.hpp"
#include "formats/pytorch/pytorch_parser.hpp"
#include "formats/safetensors/safetensors_parser.hpp"
#include "support/parse_and_read.hpp"
#include "support/safetensors_writer.hpp"
#include "support/torch_pickle_builder.hpp"
#include "util/op_count.hpp"

namespace ballast::test {
namespace {

uint64_t ops_to_parse(const FormatParser& parser, const std::string& bytes) {
  ParseContext ctx{.source = memory_source_of(bytes, "scaling"), .limits = Limits{}};
  OpCounter counter;
  (void)parser.parse(ctx);
  return counter.count();
}

void expect_linear(const std::string& what, const FormatParser& parser,
                   const std::function<std::string(size_t)>& make, size_t n) {
  const uint64_t one = ops_to_parse(parser, make(n));
  const uint64_t ten = ops_to_parse(parser, make(10 * n));
  std::printf("%s: %zu items %llu operations, %zu items %llu operations (%.2fx)\n", what.c_str(), n,
              static_cast<unsigned long long>(one), 10 * n, static_cast<unsigned long long>(ten),
              static_cast<double>(ten) / one);
  EXPECT_GE(one, n) << what << ": the parse counts at least one operation per item";
  EXPECT_LE(ten, 12 * one) << what << ": " << one << " operations for " << n << " items but " << ten
                           << " for " << 10 * n;
}

std::string le(uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}
std::string gguf_string(const std::string& s) { return le(s.size(), 8) + s; }

// GGUF v3 with `keys` u8 metadata pairs and `tensors` one-element f32 tensors.
std::string gguf(size_t keys, size_t tensors) {
  std::string out = "GGUF" + le(3, 4) + le(tensors, 8) + le(keys, 8);
  for (size_t i = 0; i < keys; ++i) out += gguf_string("key." + std::to_string(i)) + le(0, 4) + "x";
  for (size_t i = 0; i < tensors; ++i)
    out += gguf_string("t." + std::to_string(i)) + le(1, 4) + le(1, 8) + le(0, 4) + le(32 * i, 8);
  out.resize((out.size() + 31) / 32 * 32, '\0');
  return out + std::string(32 * tensors, '\0');
}

// {"t<i>": a one-float tensor over storage "<i>"} for `n` tensors.
std::string torch_pickle(size_t n) {
  PickleBuilder p;
  p.proto(2).op('}').mark();
  for (size_t i = 0; i < n; ++i)
    p.str("t" + std::to_string(i)).tensor("FloatStorage", std::to_string(i), 1, 0, {1}, {1});
  return p.op('u').stop().bytes();
}

std::string torch_zip(size_t n) {
  std::vector<std::pair<std::string, std::string>> storages;
  for (size_t i = 0; i < n; ++i) storages.emplace_back(std::to_string(i), std::string(4, '\0'));
  return torch_zip_file(torch_pickle(n), storages);
}

std::string torch_legacy(size_t n) {
  std::vector<LegacyStorage> storages;
  for (size_t i = 0; i < n; ++i) storages.push_back({std::to_string(i), 1, std::string(4, '\0')});
  return legacy_torch_file(torch_pickle(n), storages);
}

// An .npz of `n` one-byte arrays.
std::string npz(size_t n) {
  std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (1,), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  const std::string npy =
      "\x93NUMPY\x01" + std::string(1, '\0') + le(header.size() + 1, 2) + header + "\n" + "x";
  std::vector<ZipEntrySpec> entries;
  for (size_t i = 0; i < n; ++i)
    entries.push_back({.name = "a" + std::to_string(i) + ".npy", .data = npy});
  return ZipWriter::build(entries).bytes;
}

// A safetensors file of `n` one-float tensors.
std::string safetensors(size_t n) {
  std::vector<StTensor> tensors;
  for (size_t i = 0; i < n; ++i)
    tensors.push_back({"t." + std::to_string(i), "F32", {1}, std::string(4, '\0')});
  return safetensors_file(tensors);
}

// Protobuf wire format, for an ONNX model of `n` one-float initializers.
std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7f) | 0x80);
  return out + static_cast<char>(v);
}
std::string len_field(uint32_t number, const std::string& payload) {
  return varint((number << 3) | 2) + varint(payload.size()) + payload;
}
std::string onnx(size_t n) {
  std::string graph;
  for (size_t i = 0; i < n; ++i)  // TensorProto: dims 1, FLOAT, name, raw_data
    graph += len_field(5, varint(1 << 3) + varint(1) + varint(2 << 3) + varint(1) +
                              len_field(8, "w" + std::to_string(i)) +
                              len_field(9, std::string(4, '\0')));
  // ModelProto: ir_version 8, graph, opset_import {version 13}
  return varint(1 << 3) + varint(8) + len_field(7, graph) +
         len_field(8, varint(2 << 3) + varint(13));
}

TEST(ParserScaling, GgufMetadataKeys) {
  expect_linear(
      "GGUF metadata keys", *make_gguf_parser(), [](size_t n) { return gguf(n, 0); }, 8000);
}

TEST(ParserScaling, GgufTensorInfos) {
  expect_linear(
      "GGUF tensor infos", *make_gguf_parser(), [](size_t n) { return gguf(0, n); }, 4000);
}

TEST(ParserScaling, TorchZipStorages) {
  expect_linear("torch zip storages", *make_pytorch_parser(), torch_zip, 2000);
}

TEST(ParserScaling, TorchLegacyStorages) {
  expect_linear("torch legacy storages", *make_pytorch_parser(), torch_legacy, 2000);
}

TEST(ParserScaling, NpzMembers) { expect_linear("npz members", *make_numpy_parser(), npz, 2000); }

TEST(ParserScaling, SafetensorsEntries) {
  expect_linear("safetensors entries", *make_safetensors_parser(), safetensors, 2000);
}

TEST(ParserScaling, OnnxInitializers) {
  expect_linear("ONNX initializers", *make_onnx_parser(), onnx, 2000);
}

}  // namespace
}  // namespace ballast::test
