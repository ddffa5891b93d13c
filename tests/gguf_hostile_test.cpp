// Hostile and edge-case GGUF files, built byte by byte with a tiny test-local writer: each
// corruption fails with its own ErrorCode (never a crash), every prefix of a valid file fails
// as invalid_format, and legal corner cases (v2, zero-sized and 0-d tensors, nested arrays)
// parse.
#include <gtest/gtest.h>

#include <functional>
#include <optional>

#include <nlohmann/json.hpp>

#include "ballast/error.hpp"
#include "formats/gguf/gguf_parser.hpp"

namespace ballast {
namespace {

// --- a minimal GGUF writer -------------------------------------------------------------------

struct Bytes {
  std::string s;
  Bytes& u8(uint64_t v) { return le(v, 1); }
  Bytes& u16(uint64_t v) { return le(v, 2); }
  Bytes& u32(uint64_t v) { return le(v, 4); }
  Bytes& u64(uint64_t v) { return le(v, 8); }
  Bytes& str(std::string_view v) {
    u64(v.size());
    s += v;
    return *this;
  }
  Bytes& le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
};

enum : uint32_t { kU8 = 0, kU16 = 2, kI32 = 5, kBool = 7, kString = 8, kArray = 9, kU32 = 4 };
enum : uint32_t { kF32 = 0, kQ8_0 = 8 };

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type = kF32;
  uint64_t offset = 0;
};

struct Gguf {
  uint32_t magic = 0x46554747;  // "GGUF"
  uint32_t version = 3;
  std::optional<uint64_t> n_tensors, n_kv;  // override the real counts
  std::vector<std::string> kvs;             // encoded pairs
  std::vector<TensorInfo> tensors;
  uint64_t alignment = 32;
  std::string data;

  Gguf& kv(std::string_view key, uint32_t type, const Bytes& value) {
    Bytes b;
    b.str(key).u32(type);
    kvs.push_back(b.s + value.s);
    return *this;
  }
  std::string bytes() const {
    Bytes b;
    b.u32(magic).u32(version).u64(n_tensors.value_or(tensors.size()));
    b.u64(n_kv.value_or(kvs.size()));
    for (const auto& kv : kvs) b.s += kv;
    for (const auto& t : tensors) {
      b.str(t.name).u32(t.ne.size());
      for (uint64_t d : t.ne) b.u64(d);
      b.u32(t.type).u64(t.offset);
    }
    while (b.s.size() % alignment != 0) b.s.push_back('\0');
    return b.s + data;
  }
};

// A small valid file: two KV pairs, an f32 [4] tensor at 0 and a q8_0 [1, 32] one at 32.
Gguf valid_file() {
  Gguf g;
  g.kv("general.architecture", kString, Bytes().str("llama"));
  g.kv("test.arr", kArray, Bytes().u32(kI32).u64(3).u32(1).u32(2).u32(3));
  g.tensors = {{"a", {4}, kF32, 0}, {"b", {32, 1}, kQ8_0, 32}};
  g.data = std::string(16, '\1') + std::string(16, '\0') + std::string(34, '\2');
  return g;
}

Index parse(const std::string& bytes, Limits limits = {}, std::string name = "test.gguf") {
  ParseContext ctx;
  std::vector<std::byte> v(reinterpret_cast<const std::byte*>(bytes.data()),
                           reinterpret_cast<const std::byte*>(bytes.data()) + bytes.size());
  ctx.source = make_memory_source(std::move(v), std::move(name));
  ctx.limits = limits;
  return make_gguf_parser()->parse(ctx);
}

std::optional<Error> parse_error(const std::string& bytes, Limits limits = {},
                                 std::string name = "test.gguf") {
  try {
    parse(bytes, limits, std::move(name));
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

// --- the hostile table -----------------------------------------------------------------------

struct Case {
  std::string name;
  std::function<std::string()> build;
  ErrorCode code;
  std::string message;  // a substring of the error message
  Limits limits = {};
  std::string source = "test.gguf";
};

std::string with(const std::function<void(Gguf&)>& change) {
  Gguf g = valid_file();
  change(g);
  return g.bytes();
}

std::string nested_arrays(int depth) {
  Bytes v;
  for (int i = 0; i < depth; ++i) v.u32(kArray).u64(1);
  v.u32(kU8).u64(0);
  Gguf g;
  g.kv("deep", kArray, v);
  return g.bytes();
}

std::vector<Case> hostile_cases() {
  using E = ErrorCode;
  Limits tiny_header;
  tiny_header.max_header_bytes = 64;
  Limits tiny_tensor;
  tiny_tensor.max_tensor_bytes = 8;
  Limits few_dims;
  few_dims.max_dims = 1;
  return {
      {"bad magic", [] { return with([](Gguf& g) { g.magic = 0x4C4D4747; }); }, E::invalid_format,
       "not a GGUF file"},
      {"version 1", [] { return with([](Gguf& g) { g.version = 1; }); }, E::unsupported,
       "GGUF version 1 is not supported"},
      {"version 4", [] { return with([](Gguf& g) { g.version = 4; }); }, E::unsupported,
       "GGUF version 4 is not supported"},
      {"big-endian version", [] { return with([](Gguf& g) { g.version = 0x03000000; }); },
       E::unsupported, "big-endian GGUF is not supported"},
      {"huge tensor count", [] { return with([](Gguf& g) { g.n_tensors = 1ULL << 40; }); },
       E::limit_exceeded, "max_tensors"},
      {"huge KV count", [] { return with([](Gguf& g) { g.n_kv = 1ULL << 40; }); },
       E::limit_exceeded, "max_metadata_entries"},
      {"KV count past the end",
       [] {
         Gguf g;
         g.kv("a", kU8, Bytes().u8(1));
         g.n_kv = 3;
         return g.bytes().substr(0, 24 + g.kvs[0].size());
       },
       E::invalid_format, "truncated"},
      {"huge key length",
       [] {
         Gguf g;
         g.kvs = {Bytes().u64(1ULL << 62).s};
         return g.bytes();
       },
       E::limit_exceeded, "max_string_length"},
      {"string past EOF",
       [] { return with([](Gguf& g) { g.kv("s", kString, Bytes().u64(100000).u8('x')); }); },
       E::invalid_format, "truncated"},
      {"array length bomb",
       [] { return with([](Gguf& g) { g.kv("bomb", kArray, Bytes().u32(kU8).u64(1ULL << 50)); }); },
       E::limit_exceeded, "max_metadata_entries"},
      {"array past EOF",
       [] { return with([](Gguf& g) { g.kv("long", kArray, Bytes().u32(kU32).u64(1000000)); }); },
       E::invalid_format, "truncated"},
      {"array nesting bomb", [] { return nested_arrays(100); }, E::limit_exceeded,
       "max_json_depth"},
      {"unknown value type", [] { return with([](Gguf& g) { g.kv("x", 13, Bytes().u8(0)); }); },
       E::invalid_format, "unknown value type 13"},
      {"unknown array element type",
       [] { return with([](Gguf& g) { g.kv("x", kArray, Bytes().u32(99).u64(1)); }); },
       E::invalid_format, "unknown element type 99"},
      {"bool that is not 0 or 1",
       [] { return with([](Gguf& g) { g.kv("b", kBool, Bytes().u8(2)); }); }, E::invalid_format,
       "bool value 2"},
      {"duplicate key",
       [] {
         return with([](Gguf& g) { g.kv("general.architecture", kString, Bytes().str("x")); });
       },
       E::invalid_format, "duplicate metadata key"},
      {"five dims", [] { return with([](Gguf& g) {
                           g.tensors[0].ne = {4, 1, 1, 1, 1};
                         }); },
       E::invalid_format, "at most 4"},
      {"rank above Limits::max_dims",
       [] { return with([](Gguf& g) {
              g.tensors[0].ne = {4, 1};
            }); }, E::limit_exceeded,
       "max_dims", few_dims},
      {"negative dim", [] { return with([](Gguf& g) { g.tensors[0].ne = {1ULL << 63}; }); },
       E::invalid_format, "negative"},
      {"overflowing ne product",
       [] { return with([](Gguf& g) {
              g.tensors[0].ne = {1ULL << 32, 1ULL << 32};
            }); },
       E::invalid_format, "overflows"},
      {"byte size overflow", [] { return with([](Gguf& g) { g.tensors[0].ne = {1ULL << 62}; }); },
       E::invalid_format, "overflows"},
      {"tensor above max_tensor_bytes", [] { return valid_file().bytes(); }, E::limit_exceeded,
       "max_tensor_bytes", tiny_tensor},
      {"removed type id 4", [] { return with([](Gguf& g) { g.tensors[0].type = 4; }); },
       E::unsupported, "unknown or removed ggml type id 4"},
      {"removed type id 33", [] { return with([](Gguf& g) { g.tensors[0].type = 33; }); },
       E::unsupported, "type id 33"},
      {"unknown type id 40", [] { return with([](Gguf& g) { g.tensors[0].type = 40; }); },
       E::unsupported, "type id 40"},
      {"ne[0] not a whole block", [] { return with([](Gguf& g) {
                                         g.tensors[1].ne = {16, 2};
                                       }); },
       E::invalid_format, "not a multiple of the 32-element Q8_0 block"},
      {"misaligned offset", [] { return with([](Gguf& g) { g.tensors[1].offset = 20; }); },
       E::invalid_format, "not a multiple of the alignment 32"},
      {"offset past EOF", [] { return with([](Gguf& g) { g.tensors[1].offset = 1ULL << 40; }); },
       E::invalid_format, "truncated: expected"},
      {"offset overflow", [] { return with([](Gguf& g) { g.tensors[1].offset = ~0ULL - 31; }); },
       E::invalid_format, "truncated: expected more than"},
      {"overlapping tensors", [] { return with([](Gguf& g) { g.tensors[1].offset = 0; }); },
       E::invalid_format, "overlaps tensor 'a'"},
      {"duplicate tensor name", [] { return with([](Gguf& g) { g.tensors[1].name = "a"; }); },
       E::invalid_format, "duplicate tensor name"},
      // gguf-py's GGUFReader types an array of arrays by its first elements: it would read the
      // strings of these as byte values.
      {"nested arrays mixing strings and numbers",
       [] {
         return with([](Gguf& g) {
           Bytes nested;
           nested.u32(kArray).u64(2);
           nested.u32(kU8).u64(1).u8(7);
           nested.u32(kString).u64(1).str("x");
           g.kv("mixed", kArray, nested);
         });
       },
       E::invalid_format, "mixes strings"},
      {"nested arrays of strings after an empty one",
       [] {
         return with([](Gguf& g) {
           Bytes nested;
           nested.u32(kArray).u64(2);
           nested.u32(kString).u64(0);
           nested.u32(kString).u64(1).str("x");
           g.kv("mixed", kArray, nested);
         });
       },
       E::invalid_format, "mixes strings"},
      // gguf-py's GGUFReader refuses a file whose keys or tensor names are not UTF-8.
      {"tensor name not utf8", [] { return with([](Gguf& g) { g.tensors[1].name = "b\xff"; }); },
       E::invalid_format, "tensor name is not valid UTF-8"},
      {"key not utf8",
       [] { return with([](Gguf& g) { g.kv("general.\xc3(", kU32, Bytes().u32(1)); }); },
       E::invalid_format, "metadata key is not valid UTF-8"},
      {"alignment not a power of two",
       [] { return with([](Gguf& g) { g.kv("general.alignment", kU32, Bytes().u32(48)); }); },
       E::invalid_format, "not a nonzero power of two"},
      {"alignment zero",
       [] { return with([](Gguf& g) { g.kv("general.alignment", kU32, Bytes().u32(0)); }); },
       E::invalid_format, "not a nonzero power of two"},
      {"alignment of the wrong type",
       [] { return with([](Gguf& g) { g.kv("general.alignment", kU16, Bytes().u16(32)); }); },
       E::invalid_format, "general.alignment is not a u32"},
      {"header above max_header_bytes", [] { return valid_file().bytes(); }, E::limit_exceeded,
       "max_header_bytes", tiny_header},
      {"split.no disagrees with the file name",
       [] {
         return with([](Gguf& g) {
           g.kv("split.no", kU16, Bytes().u16(0));
           g.kv("split.count", kU16, Bytes().u16(3));
         });
       },
       E::invalid_format,
       "file name says shard 2 of 3",
       {},
       "/m/model-00002-of-00003.gguf"},
      {"split.no not below split.count",
       [] {
         return with([](Gguf& g) {
           g.kv("split.no", kU16, Bytes().u16(3));
           g.kv("split.count", kU16, Bytes().u16(3));
         });
       },
       E::invalid_format, "split.no 3 is not below split.count 3"},
      {"split.tensors.count below the shard's tensors",
       [] { return with([](Gguf& g) { g.kv("split.tensors.count", kI32, Bytes().u32(1)); }); },
       E::invalid_format, "split.tensors.count 1"},
  };
}

TEST(GgufHostile, EveryCorruptionFailsWithItsOwnCode) {
  const auto cases = hostile_cases();
  ASSERT_GE(cases.size(), 12u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto error = parse_error(c.build(), c.limits, c.source);
    ASSERT_TRUE(error.has_value()) << "parsed without error";
    EXPECT_EQ(error->code(), c.code) << error->what();
    EXPECT_NE(error->message().find(c.message), std::string::npos) << error->what();
    EXPECT_EQ(error->context().source, c.source);
    EXPECT_TRUE(error->context().offset.has_value());
  }
}

TEST(GgufHostile, TensorErrorsNameTheTensorAndItsInfoOffset) {
  auto error = parse_error(with([](Gguf& g) { g.tensors[1].type = 36; }));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->context().tensor, "b");
  EXPECT_NE(std::string(error->what()).find("tensor: 'b'"), std::string::npos) << error->what();
  // Tensor "b"'s info follows the 24-byte header, the two KV pairs and tensor "a"'s info.
  const uint64_t b_info =
      24 + (8 + 20 + 4 + 8 + 5) + (8 + 8 + 4 + 4 + 8 + 12) + (8 + 1 + 4 + 8 + 4 + 8);
  EXPECT_EQ(error->context().offset, b_info);
}

TEST(GgufHostile, EveryPrefixOfAValidFileFailsAsInvalidFormat) {
  const std::string bytes = valid_file().bytes();
  ASSERT_NO_THROW(parse(bytes));
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto error = parse_error(bytes.substr(0, n));
    ASSERT_TRUE(error.has_value()) << "prefix of " << n << " bytes parsed";
    EXPECT_EQ(error->code(), ErrorCode::invalid_format) << n << ": " << error->what();
  }
}

// --- legal corner cases ----------------------------------------------------------------------

TEST(GgufEdgeCases, ValidFileParses) {
  const Index index = parse(valid_file().bytes());
  ASSERT_EQ(index.tensors.size(), 2u);
  const uint64_t data_start = valid_file().bytes().size() - 66;
  EXPECT_EQ(index.tensors[0].name, "a");
  EXPECT_EQ(index.tensors[0].dtype, DType::f32);
  EXPECT_EQ(index.tensors[0].shape, Shape{4});
  EXPECT_EQ(index.tensors[0].offset, data_start);
  EXPECT_EQ(index.tensors[1].dtype, DType::q8_0);
  EXPECT_EQ(index.tensors[1].shape, (Shape{1, 32}));  // ne[] reversed
  EXPECT_EQ(index.tensors[1].offset, data_start + 32);
  EXPECT_EQ(index.tensors[1].nbytes(), 34u);
  EXPECT_EQ(nlohmann::json::parse(index.extra),
            nlohmann::json::parse(R"({"general.architecture":"llama","test.arr":[1,2,3]})"));
}

TEST(GgufEdgeCases, VersionTwoParsesLikeVersionThree) {
  Gguf g = valid_file();
  g.version = 2;
  EXPECT_EQ(parse(g.bytes()).tensors.size(), 2u);
}

TEST(GgufEdgeCases, ZeroSizedAndScalarTensorsAreLegal) {
  Gguf g;
  g.tensors = {
      {"empty", {0, 3}, kQ8_0, 0}, {"scalar", {}, kF32, 0}, {"also_empty", {4, 0}, kF32, 0}};
  g.data = std::string(4, '\0');
  const Index index = parse(g.bytes());
  ASSERT_EQ(index.tensors.size(), 3u);
  EXPECT_EQ(index.tensors[0].shape, (Shape{3, 0}));
  EXPECT_EQ(index.tensors[0].nbytes(), 0u);
  EXPECT_EQ(index.tensors[1].shape, Shape{});
  EXPECT_EQ(index.tensors[1].nbytes(), 4u);
  EXPECT_EQ(index.tensors[2].nbytes(), 0u);
}

TEST(GgufEdgeCases, NoTensorsAndNoDataSectionIsLegal) {
  Gguf g;
  g.kv("general.name", kString, Bytes().str("x"));
  std::string bytes = g.bytes();
  while (bytes.back() == '\0') bytes.pop_back();  // the data section may start past EOF
  const Index index = parse(bytes);
  EXPECT_TRUE(index.tensors.empty());
  EXPECT_EQ(index.extra, R"({"general.name":"x"})");
}

TEST(GgufEdgeCases, NestedArraysBecomeNestedJson) {
  Gguf g;
  Bytes nested;
  nested.u32(kArray).u64(2);
  nested.u32(kString).u64(2).str("a").str("b");  // ["a", "b"]
  nested.u32(kString).u64(0);                    // []
  g.kv("nested", kArray, nested);
  g.kv("deep", kArray, Bytes().u32(kArray).u64(1).u32(kArray).u64(1).u32(kBool).u64(1).u8(1));
  const auto extra = nlohmann::json::parse(parse(g.bytes()).extra);
  EXPECT_EQ(extra["nested"], nlohmann::json::parse(R"([["a","b"],[]])"));
  EXPECT_EQ(extra["deep"], nlohmann::json::parse("[[[true]]]"));
}

TEST(GgufEdgeCases, AlignmentFromMetadataPlacesTheDataSection) {
  Gguf g = valid_file();
  g.kvs.insert(g.kvs.begin(), [] {
    Bytes b;
    b.str("general.alignment").u32(kU32).u32(64);
    return b.s;
  }());
  g.alignment = 64;
  g.tensors[1].offset = 64;
  g.data = std::string(16, '\1') + std::string(48, '\0') + std::string(34, '\2');
  const std::string bytes = g.bytes();
  const Index index = parse(bytes);
  EXPECT_EQ(index.tensors[0].offset % 64, 0u);
  EXPECT_EQ(index.tensors[1].offset, index.tensors[0].offset + 64);
  EXPECT_EQ(nlohmann::json::parse(index.extra)["general.alignment"], 64);
}

TEST(GgufEdgeCases, MatchingSplitKeysAreAccepted) {
  Gguf g = valid_file();
  g.kv("split.no", kU16, Bytes().u16(1));
  g.kv("split.count", kU16, Bytes().u16(3));
  g.kv("split.tensors.count", kI32, Bytes().u32(6));
  const Index index = parse(g.bytes(), {}, "/m/model-00002-of-00003.gguf");
  const auto extra = nlohmann::json::parse(index.extra);
  EXPECT_EQ(extra["split.no"], 1);
  EXPECT_EQ(extra["split.count"], 3);
  EXPECT_EQ(extra["split.tensors.count"], 6);
}

}  // namespace
}  // namespace ballast
