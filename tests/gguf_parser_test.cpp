// The GGUF parser against the golden corpus: every gguf/ and real-world GGUF file in the
// manifest parses to the manifest's names, dtypes, row-major shapes, byte counts, data offsets,
// stored-block hashes, f32-dequantization hashes (through ggml_dequant) and metadata.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "ballast/error.hpp"
#include "ballast/hash.hpp"
#include "formats/gguf/gguf_parser.hpp"
#include "io/file_source.hpp"
#include "support/test_support.hpp"
#include "transform/ggml_dequant.hpp"

namespace ballast {
namespace {

using nlohmann::json;

Index parse_file(const std::filesystem::path& path) {
  ParseContext ctx;
  ctx.source = open_file_source(path);
  return make_gguf_parser()->parse(ctx);
}

// The on-disk bytes of a summarised array, as the manifest hashes them.
std::string pack_array(const json& values, const std::string& kv_type) {
  const std::string t = kv_type.substr(6, kv_type.size() - 7);  // "array[f32]" -> "f32"
  std::string out;
  auto put = [&](uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  };
  for (const json& v : values) {
    if (t == "string") {
      const std::string s = v.get<std::string>();
      put(s.size(), 8);
      out += s;
    } else if (t == "f32") {
      uint32_t bits;
      const float x = v.get<float>();
      std::memcpy(&bits, &x, 4);
      put(bits, 4);
    } else if (t == "f64") {
      uint64_t bits;
      const double x = v.get<double>();
      std::memcpy(&bits, &x, 8);
      put(bits, 8);
    } else if (t == "bool") {
      put(v.get<bool>() ? 1 : 0, 1);
    } else {
      const int n = t.ends_with("8") ? 1 : t.ends_with("16") ? 2 : t.ends_with("32") ? 4 : 8;
      put(t[0] == 'u' ? v.get<uint64_t>() : static_cast<uint64_t>(v.get<int64_t>()), n);
    }
  }
  return out;
}

void expect_metadata(const json& entry, const json& extra) {
  ASSERT_TRUE(extra.is_object());
  for (const auto& [key, expected] : entry["metadata"].items()) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(extra.contains(key));
    const json& actual = extra[key];
    if (expected.is_object()) {  // {"len", "first", "sha256"} of a long array
      ASSERT_TRUE(actual.is_array());
      EXPECT_EQ(actual.size(), expected["len"].get<size_t>());
      for (size_t i = 0; i < expected["first"].size(); ++i)
        EXPECT_EQ(actual[i], expected["first"][i]);
      const std::string bytes = pack_array(actual, entry["gguf_kv_types"][key]);
      EXPECT_EQ(sha256_hex(std::as_bytes(std::span(bytes))), expected["sha256"]);
    } else {
      EXPECT_EQ(actual, expected);
    }
  }
}

void expect_tensors(const json& entry, const Index& index) {
  std::set<std::string> names;
  for (const TensorEntry& t : index.tensors) {
    SCOPED_TRACE(t.name);
    names.insert(t.name);
    ASSERT_TRUE(entry["tensors"].contains(t.name));
    const json& want = entry["tensors"][t.name];
    EXPECT_EQ(dtype_name(t.dtype), want["dtype"]);
    EXPECT_EQ(json(t.shape), want["shape"]);
    EXPECT_EQ(t.nbytes(), want["nbytes"]);
    EXPECT_EQ(t.offset, want["data_offset"]);
    EXPECT_TRUE(t.is_contiguous());
    const std::vector<std::byte> bytes = t.data->read(t.offset, t.nbytes());
    EXPECT_EQ(sha256_hex(bytes), want["sha256"]);
    if (dtype_info(t.dtype).kind == DTypeKind::quantized) {
      ASSERT_TRUE(want.contains("sha256_f32"));
      ASSERT_TRUE(ggml_can_dequantize(t.dtype));
      std::vector<float> f32(t.numel());
      ggml_dequantize_to_f32(t.dtype, bytes, f32);
      EXPECT_EQ(sha256_hex(std::as_bytes(std::span(f32))), want["sha256_f32"]);
    }
  }
  EXPECT_EQ(names.size(), entry["tensors"].size());
}

TEST(GgufParserGolden, EveryFileMatchesTheManifest) {
  BALLAST_REQUIRE_GOLDEN();
  int ok = 0;
  for (const json& entry : test::golden_entries("gguf")) {
    if (entry["expect"] != "ok") continue;
    SCOPED_TRACE(entry["path"].get<std::string>());
    const auto path = *test::golden_dir() / entry["path"].get<std::string>();
    const Index index = parse_file(path);
    EXPECT_EQ(index.format, WeightFormat::gguf());
    expect_tensors(entry, index);
    expect_metadata(entry, json::parse(index.extra));
    ++ok;
  }
  EXPECT_EQ(ok, 11);  // 8 in gguf/, 1 from ollama, 2 from llama.cpp
}

TEST(GgufParserGolden, MetadataKeepsFileOrderAndNoHeaderFields) {
  BALLAST_REQUIRE_GOLDEN();
  const Index index = parse_file(*test::golden_dir() / "gguf/all_types.gguf");
  const auto extra = nlohmann::ordered_json::parse(index.extra);
  EXPECT_EQ(extra.begin().key(), "general.architecture");
  EXPECT_EQ(extra.size(), 21u);  // n_kv; GGUF.version / tensor_count / kv_count are not KV pairs
}

TEST(GgufParserGolden, TruncatedFileFailsCleanly) {
  BALLAST_REQUIRE_GOLDEN();
  try {
    parse_file(*test::golden_dir() / "bad/truncated_test.gguf");
    FAIL() << "parsed a truncated file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_format);
    EXPECT_EQ(e.message(), "truncated: expected 8 bytes, file has 6");
    EXPECT_EQ(e.context().offset, 4u);
  }
}

TEST(GgufParserGolden, BigEndianFileIsRefusedAsUnsupported) {
  BALLAST_REQUIRE_GOLDEN();
  try {
    parse_file(*test::golden_dir() / "bad/big_endian.gguf");
    FAIL() << "parsed a big-endian file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(e.message().find("big-endian GGUF is not supported"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("big_endian.gguf"), std::string::npos);
  }
}

TEST(GgufParser, ProbeLooksForTheMagic) {
  auto parser = make_gguf_parser();
  const std::string good = "GGUF\x03\0\0\0";
  const std::string bad = "GGML\x03\0\0\0";
  EXPECT_TRUE(parser->probe(std::as_bytes(std::span(good)), good.size()));
  EXPECT_FALSE(parser->probe(std::as_bytes(std::span(bad)), bad.size()));
  EXPECT_FALSE(parser->probe(std::as_bytes(std::span(good).first(3)), 3));
  EXPECT_EQ(parser->format(), WeightFormat::gguf());
  EXPECT_EQ(parser->extensions(), std::vector<std::string>{".gguf"});
}

}  // namespace
}  // namespace ballast
