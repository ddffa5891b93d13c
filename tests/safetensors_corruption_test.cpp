// Hostile safetensors files: each corruption must fail with its own error code before any
// tensor data is touched, naming the file (and the tensor and byte offset where known).
#include <gtest/gtest.h>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

struct Corruption {
  std::string name;
  std::string bytes;
  ErrorCode code;
};

std::string header(const std::string& text) {
  return safetensors_bytes(text, std::string(16, '\0'));
}

std::vector<Corruption> corruptions() {
  const std::string f32x4 = f32_bytes({1, 2, 3, 4});
  std::string deep = "{\"__metadata__\":" + std::string(100, '[') + std::string(100, ']') + "}";
  std::string huge_length(8, '\0');
  huge_length[3] = 0x01;  // 16 MiB: within the limit
  std::string over_limit = std::string("\x00\x00\x00\x10\x00\x00\x00\x00", 8) + "{}";  // 256 MiB
  // 300,000 tensor entries: nlohmann's callback parser (used before) rescanned the whole
  // object each time an entry ended, about 4.5e10 steps here; the checked parse is linear.
  std::string many = "{";
  for (int i = 0; i < 300'000; ++i) many += (i ? ",\"t" : "\"t") + std::to_string(i) + "\":{}";
  many += "}";
  std::string ones_65 = "1";
  for (int i = 1; i < 65; ++i) ones_65 += ",1";
  return {
      {"shorter_than_length_field", std::string("\x05\x00\x00", 3), ErrorCode::invalid_format},
      {"header_length_over_limit", over_limit, ErrorCode::limit_exceeded},
      {"header_length_past_eof", huge_length + "{}", ErrorCode::invalid_format},
      {"header_not_json", safetensors_bytes("{\"a\": [1, 2", ""), ErrorCode::invalid_format},
      {"header_not_object", safetensors_bytes("[1, 2]  ", ""), ErrorCode::invalid_format},
      {"header_too_deep", safetensors_bytes(deep, ""), ErrorCode::limit_exceeded},
      {"many_entries_parse_in_linear_time", safetensors_bytes(many, ""), ErrorCode::invalid_format},
      {"duplicate_names_by_escape",
       header(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"\u0061":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})"),
       ErrorCode::invalid_format},
      {"duplicate_names",
       header(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})"),
       ErrorCode::invalid_format},
      {"unknown_dtype", header(R"({"a":{"dtype":"F33","shape":[4],"data_offsets":[0,16]}})"),
       ErrorCode::unsupported},
      {"offsets_past_buffer", header(R"({"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}})"),
       ErrorCode::invalid_format},
      {"overlapping_offsets",
       header(
           R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})"),
       ErrorCode::invalid_format},
      {"gap_in_buffer",
       header(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})"),
       ErrorCode::invalid_format},
      {"trailing_bytes", header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})"),
       ErrorCode::invalid_format},
      {"size_mismatch", header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})"),
       ErrorCode::invalid_format},
      {"shape_overflow",
       header(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,16]}})"),
       ErrorCode::invalid_format},
      {"negative_dim", header(R"({"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})"),
       ErrorCode::invalid_format},
      {"end_before_begin", header(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[16,8]}})"),
       ErrorCode::invalid_format},
      {"metadata_not_strings",
       header(R"({"__metadata__":{"k":1},"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})"),
       ErrorCode::invalid_format},
      {"f4_odd_elements", header(R"({"a":{"dtype":"F4","shape":[31],"data_offsets":[0,16]}})"),
       ErrorCode::invalid_format},
      {"missing_offsets", header(R"({"a":{"dtype":"F32","shape":[4]}})"),
       ErrorCode::invalid_format},
      {"rank_over_limit",
       header(R"({"a":{"dtype":"U8","shape":[)" + ones_65 + R"(],"data_offsets":[0,16]}})"),
       ErrorCode::limit_exceeded},
      {"entry_is_an_array", header(R"({"a":[{"dtype":"F32","shape":[4],"data_offsets":[0,16]}]})"),
       ErrorCode::invalid_format},
      {"shape_nests_an_array",
       header(R"({"a":{"dtype":"F32","shape":[[4]],"data_offsets":[0,16]}})"),
       ErrorCode::invalid_format},
      {"dtype_not_a_string", header(R"({"a":{"dtype":["F32"],"shape":[4],"data_offsets":[0,16]}})"),
       ErrorCode::invalid_format},
      {"three_offsets", header(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16,16]}})"),
       ErrorCode::invalid_format},
      {"metadata_twice",
       header(
           R"({"__metadata__":{},"__metadata__":{},"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})"),
       ErrorCode::invalid_format},
  };
}

class SafetensorsCorruption : public testing::TestWithParam<Corruption> {};

TEST_P(SafetensorsCorruption, FailsWithItsOwnCode) {
  TempDir dir;
  auto path = dir / "bad.safetensors";
  write_file(path, GetParam().bytes);
  auto loader = make_weight_loader();
  try {
    loader->get_metadata(WeightSource::file(path));
    FAIL() << "accepted a corrupt file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), GetParam().code) << e.what();
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  auto r = run_command(cli_path() + " inspect " + shell_quote(path.string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("ballast: error: ", 0), 0u) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Table, SafetensorsCorruption, testing::ValuesIn(corruptions()),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(SafetensorsCorruption, ErrorNamesTensorAndOffset) {
  TempDir dir;
  auto path = dir / "bad.safetensors";
  write_file(path, header(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})"));
  try {
    make_weight_loader()->get_metadata(WeightSource::file(path));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.context().tensor, "w");
    ASSERT_TRUE(e.context().offset.has_value());
  }
}

// A syntax error anywhere decides the file, even after a problem in the content.
TEST(SafetensorsCorruption, SyntaxErrorWinsOverAnEarlierContentProblem) {
  TempDir dir;
  auto path = dir / "bad.safetensors";
  write_file(path, safetensors_bytes(R"({"a":5,"b":{"dtype":)", ""));
  try {
    make_weight_loader()->get_metadata(WeightSource::file(path));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("not valid JSON"), std::string::npos) << e.what();
    EXPECT_EQ(e.context().source, path.string());
  }
}

// Keys the format does not define, whatever they hold, are ignored; a repeated field counts
// once, with its last value, as in a JSON object.
TEST(SafetensorsCorruption, UnknownFieldsAreSkipped) {
  TempDir dir;
  auto path = dir / "extra.safetensors";
  write_file(
      path,
      header(
          R"({"a":{"extra":{"x":[1,{"y":[2,[3]]}]},"dtype":"U8","shape":[9],"shape":[2,8],"data_offsets":[0,16],"note":"n"},"__metadata__":{"k":"v","j":"w"}})"));
  const WeightMetadata meta = make_weight_loader()->get_metadata(WeightSource::file(path));
  ASSERT_EQ(meta.tensors.size(), 1u);
  EXPECT_EQ(meta.tensors.at("a").shape, (Shape{2, 8}));
  EXPECT_EQ(nlohmann::json::parse(meta.extra), nlohmann::json({{"j", "w"}, {"k", "v"}}));
}

TEST(SafetensorsCorruption, EveryTruncationFailsCleanly) {
  const std::string valid = safetensors_file(
      {{"a", "F32", {2, 2}, f32_bytes({1, 2, 3, 4})}, {"b", "F16", {2}, std::string(4, '\1')}},
      nlohmann::json{{"k", "v"}});
  TempDir dir;
  auto loader = make_weight_loader();
  for (size_t cut = 0; cut < valid.size(); ++cut) {
    auto path = dir / ("cut" + std::to_string(cut) + ".safetensors");
    write_file(path, valid.substr(0, cut));
    EXPECT_THROW(loader->get_metadata(WeightSource::file(path)), Error) << "cut at " << cut;
  }
  auto path = dir / "whole.safetensors";
  write_file(path, valid);
  EXPECT_EQ(loader->get_metadata(WeightSource::file(path)).tensors.size(), 2u);
}

}  // namespace
}  // namespace ballast::test
