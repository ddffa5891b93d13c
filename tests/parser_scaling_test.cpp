// Every parser's work grows at most as n log n in each repeated element of its input (issues 30
// and 37): safetensors entries and __metadata__ keys, GGUF KV pairs, tensor infos and array
// elements, pickle ops, memo entries and dict entries, torch zip and legacy storages, zip and
// npz members, ONNX initializers, nodes, attributes, external_data entries and metadata_props,
// a shard index's weight_map entries, .npy header dict keys, and the typed metadata built from
// any format's JSON. Operations, not seconds, are counted: parsers count their units of work and
// every key comparison their lookups make (OpCounter, util/op_count.hpp), so a duplicate check
// or lookup that re-scans what came before shows up as 256x the count for 16x the input. Each
// case counts n and 16n elements and allows 16 x log(16n) / log(n), with a quarter more.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/error.hpp"
#include "core/metadata_json.hpp"
#include "formats/gguf/gguf_parser.hpp"
#include "formats/numpy/numpy_parser.hpp"
#include "formats/onnx/onnx_parser.hpp"
#include "formats/pytorch/pytorch_parser.hpp"
#include "formats/safetensors/safetensors_parser.hpp"
#include "loader/shard_index.hpp"
#include "support/parse_and_read.hpp"
#include "support/safetensors_writer.hpp"
#include "support/torch_pickle_builder.hpp"
#include "util/op_count.hpp"

namespace ballast::test {
namespace {

constexpr size_t kGrowth = 16;

uint64_t ops_of(const std::function<void()>& work) {
  OpCounter counter;
  work();
  return counter.count();
}

Index parse(const FormatParser& parser, const std::string& bytes) {
  ParseContext ctx{.source = memory_source_of(bytes, "scaling"), .limits = Limits{}};
  return parser.parse(ctx);
}

// The parse of `make(n)` by `parser`, counted.
std::function<uint64_t(size_t)> parse_ops(std::shared_ptr<const FormatParser> parser,
                                          std::function<std::string(size_t)> make) {
  return [parser, make](size_t n) {
    const std::string bytes = make(n);
    return ops_of([&] { (void)parse(*parser, bytes); });
  };
}

// The same for an input the parser reads whole and then refuses (an .npy header with keys it
// does not know, an external tensor without its file).
std::function<uint64_t(size_t)> refused_parse_ops(std::shared_ptr<const FormatParser> parser,
                                                  std::function<std::string(size_t)> make) {
  return [parser, make](size_t n) {
    const std::string bytes = make(n);
    return ops_of([&] { EXPECT_THROW((void)parse(*parser, bytes), Error); });
  };
}

void expect_n_log_n(const std::string& what, const std::function<uint64_t(size_t)>& ops, size_t n) {
  const uint64_t small = ops(n);
  const uint64_t large = ops(kGrowth * n);
  const double allowed = 1.25 * kGrowth * std::log2(static_cast<double>(kGrowth * n)) /
                         std::log2(static_cast<double>(n));
  std::printf("%s: %zu elements %llu operations, %zu elements %llu operations (%.2fx of %.2fx)\n",
              what.c_str(), n, static_cast<unsigned long long>(small), kGrowth * n,
              static_cast<unsigned long long>(large),
              static_cast<double>(large) / static_cast<double>(std::max<uint64_t>(small, 1)),
              allowed);
  EXPECT_GE(small, n) << what << ": the work counts at least one operation per element";
  EXPECT_LE(static_cast<double>(large), allowed * static_cast<double>(small))
      << what << ": " << small << " operations for " << n << " elements but " << large << " for "
      << kGrowth * n;
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
std::string varint_field(uint32_t number, uint64_t value) {
  return varint(number << 3) + varint(value);
}
// ModelProto: ir_version 8, `graph`, opset_import {version 13}, then `more` fields.
std::string onnx_model(const std::string& graph, const std::string& more = {}) {
  return varint_field(1, 8) + len_field(7, graph) + len_field(8, varint_field(2, 13)) + more;
}
// TensorProto: dims 1, FLOAT, name, then `data`.
std::string onnx_tensor(const std::string& name, const std::string& data) {
  return varint_field(1, 1) + varint_field(2, 1) + len_field(8, name) + data;
}
std::string onnx_entry(const std::string& key, const std::string& value) {
  return len_field(1, key) + len_field(2, value);
}
// `n` one-float initializers.
std::string onnx(size_t n) {
  std::string graph;
  for (size_t i = 0; i < n; ++i)
    graph += len_field(5, onnx_tensor("w" + std::to_string(i), len_field(9, std::string(4, '\0'))));
  return onnx_model(graph);
}
// `n` nodes of an unknown op, one int attribute each.
std::string onnx_nodes(size_t n) {
  std::string graph;
  for (size_t i = 0; i < n; ++i)
    graph += len_field(1, len_field(3, "n" + std::to_string(i)) + len_field(4, "Foo") +
                              len_field(5, len_field(1, "a") + varint_field(3, i)));
  return onnx_model(graph);
}
// One node with `n` int attributes.
std::string onnx_attributes(size_t n) {
  std::string node = len_field(3, "n") + len_field(4, "Foo");
  for (size_t i = 0; i < n; ++i)
    node += len_field(5, len_field(1, "a" + std::to_string(i)) + varint_field(3, i));
  return onnx_model(len_field(1, node));
}
// One external initializer with `n` external_data entries besides location, offset and length
// (its file is not there: the parse reads every entry, then refuses it).
std::string onnx_external_entries(size_t n) {
  std::string data = varint_field(14, 1) + len_field(13, onnx_entry("location", "w.bin")) +
                     len_field(13, onnx_entry("offset", "0")) +
                     len_field(13, onnx_entry("length", "4"));
  for (size_t i = 0; i < n; ++i) data += len_field(13, onnx_entry("k" + std::to_string(i), "v"));
  return onnx_model(len_field(5, onnx_tensor("w", data)));
}
// One initializer and `n` metadata_props.
std::string onnx_metadata(size_t n) {
  std::string props;
  for (size_t i = 0; i < n; ++i) props += len_field(14, onnx_entry("k" + std::to_string(i), "v"));
  return onnx_model(len_field(5, onnx_tensor("w", len_field(9, std::string(4, '\0')))), props);
}

// `n` different 16-byte strings of one std::hash<std::string_view> value where std::hash is
// libstdc++'s (MurmurHash64A, seed 0xc70f6907: each 8-byte block goes through an invertible
// mix, so a second block can bring the state back to any value), else none.
std::vector<std::string> std_hash_collisions(size_t n) {
  constexpr uint64_t kMul = 0xc6a4a7935bd1e995ULL;
  uint64_t inverse = kMul;  // Newton's iteration for kMul's inverse modulo 2^64
  for (int i = 0; i < 5; ++i) inverse *= 2 - kMul * inverse;
  auto shift_mix = [](uint64_t v) { return v ^ (v >> 47); };  // its own inverse
  auto mix = [&](uint64_t block) { return shift_mix(block * kMul) * kMul; };
  auto unmix = [&](uint64_t mixed) { return shift_mix(mixed * inverse) * inverse; };
  const uint64_t start = 0xc70f6907ULL ^ (16 * kMul);
  constexpr uint64_t kState =
      0x0123456789abcdefULL;  // every string's state before its last multiply
  // Only names whose computed second block is ASCII (about 1 in 256): formats refuse names
  // that are not UTF-8, as their reference readers do.
  std::vector<std::string> out;
  for (size_t i = 0; out.size() < n && i < 10'000'000; ++i) {
    const std::string first = fmt::format("k{:07}", i);
    uint64_t block = 0;
    for (int b = 0; b < 8; ++b)
      block |= static_cast<uint64_t>(static_cast<uint8_t>(first[b])) << (8 * b);
    const uint64_t second = unmix(((start ^ mix(block)) * kMul) ^ kState);
    if ((second & 0x8080808080808080ULL) == 0) out.push_back(first + le(second, 8));
  }
  const std::hash<std::string_view> hash;
  if (n >= 2 && hash(out[0]) != hash(out[1])) return {};
  return out;
}

// GGUF v3 whose metadata keys (u8 values) and one-element f32 tensors have the given names.
std::string gguf_named(const std::vector<std::string>& keys,
                       const std::vector<std::string>& tensors) {
  std::string out = "GGUF" + le(3, 4) + le(tensors.size(), 8) + le(keys.size(), 8);
  for (const auto& key : keys) out += gguf_string(key) + le(0, 4) + "x";
  for (size_t i = 0; i < tensors.size(); ++i)
    out += gguf_string(tensors[i]) + le(1, 4) + le(1, 8) + le(0, 4) + le(32 * i, 8);
  out.resize((out.size() + 31) / 32 * 32, '\0');
  return out + std::string(32 * tensors.size(), '\0');
}

// GGUF v3 with one array of `n` u32 (element type 4) or strings (8).
std::string gguf_array(size_t n, bool strings) {
  std::string out = "GGUF" + le(3, 4) + le(0, 8) + le(1, 8) + gguf_string("a") + le(9, 4) +
                    le(strings ? 8 : 4, 4) + le(n, 8);
  for (size_t i = 0; i < n; ++i) out += strings ? gguf_string(std::to_string(i)) : le(i, 4);
  out.resize((out.size() + 31) / 32 * 32, '\0');
  return out;
}

// A torch zip of one tensor whose pickle's top-level dict also holds `n` entries: a string
// each, put in the memo and got back under a second key (LONG_BINPUT, LONG_BINGET).
std::string torch_memo_and_dict(size_t n) {
  PickleBuilder p;
  p.proto(2).op('}').mark();
  p.str("t").tensor("FloatStorage", "0", 1, 0, {1}, {1});
  for (size_t i = 0; i < n; ++i) p.str("k" + std::to_string(i)).str("v").op('r').raw(le(i, 4));
  for (size_t i = 0; i < n; ++i) p.str("g" + std::to_string(i)).op('j').raw(le(i, 4));
  return torch_zip_file(p.op('u').stop().bytes(), {{"0", std::string(4, '\0')}});
}

// A safetensors file of one tensor and `n` __metadata__ keys.
std::string safetensors_metadata(size_t n) {
  nlohmann::json metadata = nlohmann::json::object();
  for (size_t i = 0; i < n; ++i) metadata["key." + std::to_string(i)] = "value";
  return safetensors_file({{"t", "F32", {1}, std::string(4, '\0')}}, metadata);
}

// JSON text of an object of `n` keys, each given `times` times.
std::string json_object(size_t n, int times) {
  std::string out = "{";
  for (int t = 0; t < times; ++t)
    for (size_t i = 0; i < n; ++i)
      out += (out.size() > 1 ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(t);
  return out + "}";
}

// A shard index of `n` tensors in two shards.
std::string shard_index(size_t n) {
  std::string map;
  for (size_t i = 0; i < n; ++i)
    map += (i ? ",\"t" : "\"t") + std::to_string(i) + "\":\"s" + std::to_string(i % 2) + "\"";
  return R"({"metadata":{"total_size":4},"weight_map":{)" + map + "}}";
}

// An .npy whose header dict holds `n` keys besides the three it must (so it is refused, once
// the dict is read).
std::string npy_header_keys(size_t n) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), ";
  for (size_t i = 0; i < n; ++i) header += "'k" + std::to_string(i) + "': 0, ";
  header += "}";
  while ((12 + header.size() + 1) % 64 != 0) header += ' ';
  return "\x93NUMPY\x02" + std::string(1, '\0') + le(header.size() + 1, 4) + header + "\n" +
         std::string(4, '\0');
}

TEST(ParserScaling, GgufMetadataKeys) {
  expect_n_log_n("GGUF metadata keys",
                 parse_ops(make_gguf_parser(), [](size_t n) { return gguf(n, 0); }), 1000);
}

TEST(ParserScaling, GgufTensorInfos) {
  expect_n_log_n("GGUF tensor infos",
                 parse_ops(make_gguf_parser(), [](size_t n) { return gguf(0, n); }), 1000);
}

// Names chosen to collide in std::hash: the hash tables of names read from files are keyed
// per process (util/keyed_hash.hpp), so these cost no more than any others.
TEST(ParserScaling, GgufNamesThatCollideInStdHash) {
  if (std_hash_collisions(2).empty()) GTEST_SKIP() << "std::hash is not libstdc++'s MurmurHash64A";
  expect_n_log_n("GGUF metadata keys colliding in std::hash",
                 parse_ops(make_gguf_parser(),
                           [](size_t n) { return gguf_named(std_hash_collisions(n), {}); }),
                 1000);
  expect_n_log_n("GGUF tensor names colliding in std::hash",
                 parse_ops(make_gguf_parser(),
                           [](size_t n) { return gguf_named({}, std_hash_collisions(n)); }),
                 1000);
}

TEST(ParserScaling, GgufArrayElements) {
  expect_n_log_n("GGUF u32 array elements",
                 parse_ops(make_gguf_parser(), [](size_t n) { return gguf_array(n, false); }),
                 1000);
  expect_n_log_n("GGUF string array elements",
                 parse_ops(make_gguf_parser(), [](size_t n) { return gguf_array(n, true); }), 1000);
}

TEST(ParserScaling, TorchZipStorages) {
  expect_n_log_n("torch zip storages", parse_ops(make_pytorch_parser(), torch_zip), 500);
}

TEST(ParserScaling, TorchLegacyStorages) {
  expect_n_log_n("torch legacy storages", parse_ops(make_pytorch_parser(), torch_legacy), 500);
}

TEST(ParserScaling, PickleMemoAndDictEntries) {
  expect_n_log_n("pickle memo and dict entries",
                 parse_ops(make_pytorch_parser(), torch_memo_and_dict), 1000);
}

TEST(ParserScaling, NpzMembers) {
  expect_n_log_n("npz members", parse_ops(make_numpy_parser(), npz), 500);
}

TEST(ParserScaling, NpyHeaderDictKeys) {
  expect_n_log_n("npy header dict keys", refused_parse_ops(make_numpy_parser(), npy_header_keys),
                 1000);
}

TEST(ParserScaling, SafetensorsEntries) {
  expect_n_log_n("safetensors entries", parse_ops(make_safetensors_parser(), safetensors), 1000);
}

TEST(ParserScaling, SafetensorsMetadataKeys) {
  expect_n_log_n("safetensors __metadata__ keys",
                 parse_ops(make_safetensors_parser(), safetensors_metadata), 1000);
}

// What get_metadata makes of a safetensors file's __metadata__: typed values from the JSON text
// its parser wrote. (An ordered JSON DOM looked each key up among those before it: minutes for
// a million keys.)
TEST(ParserScaling, SafetensorsMetadataKeysAsTypedValues) {
  const auto parser = make_safetensors_parser();
  expect_n_log_n(
      "safetensors __metadata__ keys as typed values",
      [&](size_t n) {
        const std::string extra = parse(*parser, safetensors_metadata(n)).extra;
        return ops_of(
            [&] { EXPECT_EQ(metadata_from_json(extra, Limits{}.max_json_depth).size(), n); });
      },
      1000);
}

// A shard index's metadata, ONNX metadata_props, torch values: any JSON object, duplicate keys
// included (the first place, the last value).
TEST(ParserScaling, JsonObjectKeysAsTypedValues) {
  for (int times : {1, 2}) {
    expect_n_log_n(
        fmt::format("JSON object keys, each {} times, as typed values", times),
        [&](size_t n) {
          const std::string text = json_object(n, times);
          return ops_of([&] {
            const MetadataValue v = metadata_from_json(text, Limits{}.max_json_depth);
            ASSERT_EQ(v.size(), n);
            EXPECT_EQ(v.members().front().first, "k0");
            EXPECT_EQ(v.members().back().second.as_int(), times - 1);
          });
        },
        1000);
  }
}

TEST(ParserScaling, ShardIndexWeightMapEntries) {
  expect_n_log_n(
      "shard index weight_map entries",
      [](size_t n) {
        const std::string text = shard_index(n);
        const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(text.data()),
                                               text.size());
        return ops_of(
            [&] { EXPECT_EQ(parse_shard_index(bytes, "index", Limits{}).weight_map.size(), n); });
      },
      1000);
}

TEST(ParserScaling, OnnxInitializers) {
  expect_n_log_n("ONNX initializers", parse_ops(make_onnx_parser(), onnx), 1000);
}

TEST(ParserScaling, OnnxNodes) {
  expect_n_log_n("ONNX nodes", parse_ops(make_onnx_parser(), onnx_nodes), 1000);
}

TEST(ParserScaling, OnnxAttributes) {
  expect_n_log_n("ONNX attributes", parse_ops(make_onnx_parser(), onnx_attributes), 1000);
}

TEST(ParserScaling, OnnxExternalDataEntries) {
  expect_n_log_n("ONNX external_data entries",
                 refused_parse_ops(make_onnx_parser(), onnx_external_entries), 1000);
}

TEST(ParserScaling, OnnxMetadataProps) {
  expect_n_log_n("ONNX metadata_props", parse_ops(make_onnx_parser(), onnx_metadata), 1000);
}

}  // namespace
}  // namespace ballast::test
