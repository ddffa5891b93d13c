// Typed metadata (ballast/metadata_value.hpp): GGUF values keep their GGUF types and arrays,
// safetensors __metadata__ and ONNX metadata_props come through as strings, JSON text is one
// rendering of the values (WeightMetadata::extra is to_json(values) for GGUF), and the value
// type's accessors refuse the wrong kind.
#include <gtest/gtest.h>

#include <cstring>

#include "ballast/error.hpp"
#include "ballast/loader.hpp"
#include "ballast/metadata_value.hpp"
#include "core/metadata_json.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast {
namespace {

using nlohmann::json;

// ---- a minimal GGUF writer: header and KV pairs, no tensors ----
template <typename T>
std::string le(T v) {
  std::string out(sizeof(T), '\0');
  std::memcpy(out.data(), &v, sizeof(T));
  return out;
}
std::string gguf_string(const std::string& s) { return le<uint64_t>(s.size()) + s; }
std::string kv(const std::string& key, uint32_t type, const std::string& value) {
  return gguf_string(key) + le(type) + value;
}
std::string gguf(const std::vector<std::string>& kvs) {
  std::string out = "GGUF" + le<uint32_t>(3) + le<uint64_t>(0) + le<uint64_t>(kvs.size());
  for (const auto& k : kvs) out += k;
  return out;
}
constexpr uint32_t kU8 = 0, kI32 = 5, kU32 = 4, kF32 = 6, kBool = 7, kString = 8, kArray = 9,
                   kU64 = 10;

WeightMetadata metadata_of(const std::filesystem::path& path) {
  return make_weight_loader()->get_metadata(WeightSource::file(path));
}

TEST(MetadataValues, GgufKeepsItsTypesAndArrays) {
  test::TempDir dir;
  const std::string tokens =
      le<uint64_t>(3) + gguf_string("<s>") + gguf_string("hi") + gguf_string("</s>");
  test::write_file(
      dir / "m.gguf",
      gguf({kv("general.architecture", kString, gguf_string("llama")),
            kv("llama.context_length", kU32, le<uint32_t>(4096)),
            kv("llama.rope.freq_base", kF32, le<float>(10000.5f)),
            kv("big", kU64, le<uint64_t>(UINT64_MAX)), kv("flag", kBool, std::string(1, '\1')),
            kv("scores", kArray, le(kF32) + le<uint64_t>(2) + le(0.25f) + le(-1.5f)),
            kv("bytes", kArray, le(kU8) + le<uint64_t>(3) + std::string("\x01\x02\xff", 3)),
            kv("tokens", kArray, le(kString) + tokens),
            kv("nested", kArray,
               le(kArray) + le<uint64_t>(2) + le(kI32) + le<uint64_t>(1) + le<int32_t>(-7) +
                   le(kBool) + le<uint64_t>(2) + std::string("\x00\x01", 2))}));
  const WeightMetadata meta = metadata_of(dir / "m.gguf");
  const MetadataValue& v = meta.values;
  ASSERT_EQ(v.type(), MetadataType::object);
  EXPECT_EQ(v.size(), 9u);
  EXPECT_EQ(v.members().front().first, "general.architecture");  // the file's order
  EXPECT_EQ(v.find("general.architecture")->as_string(), "llama");
  EXPECT_EQ(v.find("llama.context_length")->type(), MetadataType::u32);
  EXPECT_EQ(v.find("llama.context_length")->as_uint(), 4096u);
  EXPECT_EQ(v.find("llama.rope.freq_base")->type(), MetadataType::f32);
  EXPECT_EQ(v.find("llama.rope.freq_base")->as_double(), 10000.5);
  EXPECT_EQ(v.find("big")->as_uint(), UINT64_MAX);
  EXPECT_THROW((void)v.find("big")->as_int(), Error);
  EXPECT_TRUE(v.find("flag")->as_bool());
  const MetadataValue& scores = *v.find("scores");
  EXPECT_EQ(scores.element_type(), MetadataType::f32);
  EXPECT_EQ(std::vector<float>(scores.elements<float>().begin(), scores.elements<float>().end()),
            (std::vector<float>{0.25f, -1.5f}));
  EXPECT_EQ(scores.at(1).type(), MetadataType::f32);
  EXPECT_THROW((void)scores.elements<double>(), Error);
  EXPECT_EQ(v.find("bytes")->element_type(), MetadataType::u8);
  EXPECT_EQ(v.find("bytes")->elements<uint8_t>()[2], 0xff);
  EXPECT_EQ(v.find("tokens")->strings(), (std::vector<std::string>{"<s>", "hi", "</s>"}));
  const MetadataValue& nested = *v.find("nested");
  EXPECT_EQ(nested.element_type(), MetadataType::array);
  EXPECT_EQ(nested.at(0).element_type(), MetadataType::i32);
  EXPECT_EQ(nested.at(0).at(0).as_int(), -7);
  EXPECT_EQ(nested.at(1).element_type(), MetadataType::boolean);
  EXPECT_FALSE(nested.at(1).at(0).as_bool());
  EXPECT_TRUE(nested.at(1).at(1).as_bool());
  // JSON is one rendering of the values: the text the CLI splices.
  EXPECT_EQ(meta.extra, to_json(v));
  EXPECT_EQ(json::parse(meta.extra)["scores"], json({0.25, -1.5}));
  EXPECT_EQ(json::parse(meta.extra)["nested"], json::parse("[[-7],[false,true]]"));
}

TEST(MetadataValues, GoldenGgufTypesAreTheManifests) {
  BALLAST_REQUIRE_GOLDEN();
  for (const json& entry : test::golden_entries("gguf")) {
    if (entry["expect"] != "ok" || !entry.contains("gguf_kv_types")) continue;
    SCOPED_TRACE(entry["path"].get<std::string>());
    const WeightMetadata meta = metadata_of(*test::golden_dir() / entry["path"].get<std::string>());
    EXPECT_EQ(meta.extra, to_json(meta.values));
    for (const auto& [key, type] : entry["gguf_kv_types"].items()) {
      SCOPED_TRACE(key);
      const MetadataValue* value = meta.values.find(key);
      ASSERT_NE(value, nullptr);
      const std::string name = type.get<std::string>();
      if (name.starts_with("array[")) {
        ASSERT_EQ(value->type(), MetadataType::array);
        EXPECT_EQ(metadata_type_name(value->element_type()), name.substr(6, name.size() - 7));
      } else {
        EXPECT_EQ(metadata_type_name(value->type()), name);
      }
    }
  }
}

TEST(MetadataValues, SafetensorsMetadataIsStrings) {
  test::TempDir dir;
  test::write_file(dir / "m.safetensors",
                   test::safetensors_file({{"w", "F32", {1}, test::f32_bytes({1.0f})}},
                                          json{{"format", "pt"}, {"step", "42"}}));
  const WeightMetadata meta = metadata_of(dir / "m.safetensors");
  ASSERT_EQ(meta.values.type(), MetadataType::object);
  EXPECT_EQ(meta.values.find("format")->as_string(), "pt");
  EXPECT_EQ(meta.values.find("step")->type(), MetadataType::string);
  EXPECT_EQ(meta.values.find("step")->as_string(), "42");
  EXPECT_EQ(json::parse(to_json(meta.values)), json::parse(meta.extra));
}

// A ModelProto with one f32 initializer and metadata_props (field 14), protobuf-encoded.
std::string varint(uint64_t v) {
  std::string out;
  do {
    const auto b = static_cast<uint8_t>(v & 0x7F);
    v >>= 7;
    out.push_back(static_cast<char>(b | (v ? 0x80 : 0)));
  } while (v);
  return out;
}
std::string vfield(uint32_t number, uint64_t v) { return varint(number << 3) + varint(v); }
std::string bfield(uint32_t number, const std::string& payload) {
  return varint((number << 3) | 2) + varint(payload.size()) + payload;
}
std::string onnx_model_with_props() {
  const std::string tensor = vfield(1, 1) + vfield(2, 1) + bfield(8, "w") + bfield(9, le(2.0f));
  const std::string prop = bfield(1, "author") + bfield(2, "ballast");
  return vfield(1, 8) + bfield(7, bfield(5, tensor)) + bfield(8, vfield(2, 13)) + bfield(14, prop);
}

TEST(MetadataValues, OnnxMetadataPropsAreStrings) {
  test::TempDir dir;
  test::write_file(dir / "m.onnx", onnx_model_with_props());
  const WeightMetadata meta = metadata_of(dir / "m.onnx");
  ASSERT_NE(meta.values.find("author"), nullptr);
  EXPECT_EQ(meta.values.find("author")->as_string(), "ballast");
  EXPECT_EQ(json::parse(to_json(meta.values)), json::parse(meta.extra));
}

TEST(MetadataValues, JsonTextBecomesCompactTypedValues) {
  const MetadataValue v = metadata_from_json(
      R"({"b":[true,false],"i":[1,-2],"f":[1,2.5],"s":["x"],"m":[1,"x"],"u":18446744073709551615,"o":{"k":null}})",
      8);
  EXPECT_EQ(v.members().front().first, "b");  // the text's order
  EXPECT_EQ(v.find("b")->element_type(), MetadataType::boolean);
  EXPECT_EQ(v.find("i")->element_type(), MetadataType::i64);
  EXPECT_EQ(v.find("f")->element_type(), MetadataType::f64);
  EXPECT_EQ(v.find("s")->element_type(), MetadataType::string);
  EXPECT_EQ(v.find("m")->element_type(), MetadataType::null);  // mixed
  EXPECT_EQ(v.find("m")->at(1).as_string(), "x");
  EXPECT_EQ(v.find("u")->type(), MetadataType::u64);
  EXPECT_EQ(v.find("o")->find("k")->type(), MetadataType::null);
  EXPECT_EQ(
      to_json(v),
      R"({"b":[true,false],"i":[1,-2],"f":[1.0,2.5],"s":["x"],"m":[1,"x"],"u":18446744073709551615,"o":{"k":null}})");
  EXPECT_EQ(metadata_from_json("[[[1]]]", 2).type(), MetadataType::null);  // too deep
  EXPECT_EQ(metadata_from_json("{", 8).type(), MetadataType::null);        // not JSON
}

TEST(MetadataValues, JsonKeyGivenTwiceKeepsItsFirstPlaceAndLastValue) {
  const MetadataValue v = metadata_from_json(
      R"({"a":1,"b":{"x":[1,"y"],"x":true},"a":[3,4.5],"c":null,"b":{"z":[]}})", 8);
  EXPECT_EQ(to_json(v), R"({"a":[3.0,4.5],"b":{"z":[]},"c":null})");
  EXPECT_EQ(to_json(metadata_from_json(R"({"k":{"x":[1,"y"],"x":true}})", 8)),
            R"({"k":{"x":true}})");
  EXPECT_EQ(to_json(metadata_from_json(R"([[1,[2]],{"a":"b"},"s",-1,18446744073709551615])", 8)),
            R"([[1,[2]],{"a":"b"},"s",-1,18446744073709551615])");
  EXPECT_EQ(metadata_from_json("[1,2] 3", 8).type(), MetadataType::null);  // not one value
}

TEST(MetadataValues, AccessorsRefuseTheWrongKind) {
  const MetadataValue s("text");
  EXPECT_EQ(s.type(), MetadataType::string);
  try {
    (void)s.as_int();
    ADD_FAILURE() << "a string read as an integer";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_EQ(e.message(), "metadata value is string, not an integer");
  }
  EXPECT_THROW((void)MetadataValue(int32_t{-1}).as_uint(), Error);
  EXPECT_THROW((void)MetadataValue::array_of<int32_t>({1}).at(1), Error);
  EXPECT_EQ(MetadataValue(uint8_t{200}).as_int(), 200);
  EXPECT_EQ(MetadataValue().size(), 0u);
}

}  // namespace
}  // namespace ballast
