// Hostile ONNX models, built byte by byte: each must be refused with its own ErrorCode, without
// crashing and without reading outside the model's folder. Also the probe on garbage.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "ballast/ballast.hpp"
#include "formats/onnx/onnx_parser.hpp"
#include "support/test_support.hpp"

namespace ballast {
namespace {

// ---- a minimal protobuf encoder for the cases ----
std::string varint(uint64_t v) {
  std::string out;
  do {
    uint8_t b = v & 0x7F;
    v >>= 7;
    out.push_back(static_cast<char>(b | (v ? 0x80 : 0)));
  } while (v);
  return out;
}
std::string vfield(uint32_t number, uint64_t v) { return varint(number << 3) + varint(v); }
std::string bfield(uint32_t number, const std::string& payload) {
  return varint((number << 3) | 2) + varint(payload.size()) + payload;
}
std::string entry(const std::string& key, const std::string& value) {
  return bfield(1, key) + bfield(2, value);
}
// A TensorProto: name, data_type, dims and more fields.
std::string tensor(const std::string& name, uint64_t data_type, std::vector<uint64_t> dims,
                   const std::string& rest) {
  std::string t;
  for (uint64_t d : dims) t += vfield(1, d);
  return t + vfield(2, data_type) + bfield(8, name) + rest;
}
std::string f32_raw(const std::string& name, uint64_t n) {
  return tensor(name, 1, {n}, bfield(9, std::string(n * 4, '\x01')));
}
std::string external(const std::string& name, uint64_t n, const std::string& entries) {
  return tensor(name, 1, {n}, entries + vfield(14, 1));
}
std::string model_of_graph(const std::string& graph) {
  return vfield(1, 8) + bfield(7, graph) + bfield(8, vfield(2, 13));
}
std::string model(const std::string& initializer) { return model_of_graph(bfield(5, initializer)); }
// An If node whose then_branch holds `inner`, nested `depth` times around a Constant.
std::string nested_graph(int depth) {
  std::string graph =
      bfield(1, bfield(2, "c") + bfield(4, "Constant") +
                    bfield(5, bfield(1, "value") + vfield(20, 4) + bfield(5, f32_raw("k", 1))));
  for (int i = 0; i < depth; ++i)
    graph = bfield(1, bfield(1, "cond") + bfield(2, "o" + std::to_string(i)) + bfield(4, "If") +
                          bfield(5, bfield(1, "then_branch") + vfield(20, 5) + bfield(6, graph)));
  return graph;
}

struct Case {
  std::string label;
  std::function<std::string()> bytes;  // the model
  ErrorCode code;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.label; }

class OnnxHostile : public ::testing::TestWithParam<Case> {};

ErrorCode refusal_code(const std::filesystem::path& path) {
  WeightSource source = WeightSource::file(path);
  source.format = WeightFormat::onnx();
  try {
    auto loader = make_weight_loader();
    WeightMetadata meta = loader->get_metadata(source);
    for (const auto& [name, info] : meta.tensors)
      loader->load_tensor(TensorSpec{.name = name, .source = source});
  } catch (const Error& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
    return e.code();
  }
  ADD_FAILURE() << "model was accepted";
  return ErrorCode::cancelled;
}

TEST_P(OnnxHostile, IsRefusedWithItsCode) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "model");
  test::write_file(dir / "model/data.bin", std::string(64, '\x02'));
  test::write_file(dir / "outside.bin", std::string(64, '\x03'));
  std::filesystem::create_symlink(dir / "outside.bin", dir / "model/escape.bin");
  test::write_file(dir / "model/model.onnx", GetParam().bytes());
  EXPECT_EQ(refusal_code(dir / "model/model.onnx"), GetParam().code);
}

const std::string kLoc = "location";
const std::vector<Case> kCases = {
    {"traversal", [] { return model(external("t", 4, bfield(13, entry(kLoc, "../outside.bin")))); },
     ErrorCode::invalid_format},
    {"absolute", [] { return model(external("t", 4, bfield(13, entry(kLoc, "/etc/passwd")))); },
     ErrorCode::invalid_format},
    {"symlink_escape",
     [] { return model(external("t", 4, bfield(13, entry(kLoc, "escape.bin")))); },
     ErrorCode::invalid_format},
    {"missing_file", [] { return model(external("t", 4, bfield(13, entry(kLoc, "nope.bin")))); },
     ErrorCode::not_found},
    {"offset_past_end",
     [] {
       return model(external("t", 1,
                             bfield(13, entry(kLoc, "data.bin")) +
                                 bfield(13, entry("offset", "65")) +
                                 bfield(13, entry("length", "4"))));
     },
     ErrorCode::invalid_format},
    {"offset_length_overflow",
     [] {
       return model(external("t", 4,
                             bfield(13, entry(kLoc, "data.bin")) +
                                 bfield(13, entry("offset", "8")) +
                                 bfield(13, entry("length", "18446744073709551615"))));
     },
     ErrorCode::invalid_format},
    {"length_not_numel_size",
     [] {
       return model(external(
           "t", 4, bfield(13, entry(kLoc, "data.bin")) + bfield(13, entry("length", "12"))));
     },
     ErrorCode::invalid_format},
    {"no_length_with_trailing_bytes",
     [] { return model(external("t", 4, bfield(13, entry(kLoc, "data.bin")))); },
     ErrorCode::invalid_format},
    {"bad_offset_text",
     [] {
       return model(external(
           "t", 4, bfield(13, entry(kLoc, "data.bin")) + bfield(13, entry("offset", "-1"))));
     },
     ErrorCode::invalid_format},
    {"huge_varint_length", [] { return vfield(1, 8) + varint(7 << 3 | 2) + varint(1ULL << 62); },
     ErrorCode::invalid_format},
    {"varint_over_10_bytes", [] { return vfield(1, 8) + std::string(11, '\xFF'); },
     ErrorCode::invalid_format},
    {"truncated_in_graph", [] { return model(f32_raw("t", 4)).substr(0, 12); },
     ErrorCode::invalid_format},
    {"truncated_in_raw_data",
     [] {
       auto m = model(f32_raw("t", 4));
       return m.substr(0, m.size() - 8);
     },
     ErrorCode::invalid_format},
    {"truncated_after_tag", [] { return vfield(1, 8) + std::string(1, '\x3A'); },
     ErrorCode::invalid_format},
    {"no_graph", [] { return vfield(1, 8); }, ErrorCode::invalid_format},
    {"nested_length_overruns_parent",
     [] {
       std::string t = f32_raw("t", 4);
       std::string graph = varint(5 << 3 | 2) + varint(t.size() + 5) + t;  // claims 5 more
       return vfield(1, 8) + bfield(7, graph);
     },
     ErrorCode::invalid_format},
    {"group_wire_type", [] { return model(f32_raw("t", 1) + varint(20 << 3 | 3)); },
     ErrorCode::invalid_format},
    {"too_many_dims",
     [] { return model(tensor("t", 1, std::vector<uint64_t>(65, 1), bfield(9, "abcd"))); },
     ErrorCode::limit_exceeded},
    {"huge_dims",
     [] {
       return model(tensor("t", 1, {1ULL << 40, 1ULL << 40}, ""));
     },
     ErrorCode::limit_exceeded},
    {"negative_dim", [] { return model(tensor("t", 1, {~0ULL}, "")); }, ErrorCode::invalid_format},
    {"unknown_data_type", [] { return model(tensor("t", 99, {1}, bfield(9, "a"))); },
     ErrorCode::unsupported},
    {"undefined_data_type", [] { return model(tensor("t", 0, {1}, bfield(9, "a"))); },
     ErrorCode::invalid_format},
    {"raw_data_size_mismatch", [] { return model(tensor("t", 1, {2}, bfield(9, "abc"))); },
     ErrorCode::invalid_format},
    {"typed_count_mismatch",
     [] { return model(tensor("t", 1, {4}, bfield(4, std::string(12, '\0')))); },
     ErrorCode::invalid_format},
    {"typed_field_for_wrong_dtype",
     [] { return model(tensor("t", 7, {1}, bfield(4, std::string(4, '\0')))); },
     ErrorCode::invalid_format},
    {"data_in_two_fields",
     [] { return model(tensor("t", 1, {1}, bfield(9, "abcd") + bfield(4, "abcd"))); },
     ErrorCode::invalid_format},
    {"no_data", [] { return model(tensor("t", 1, {3}, "")); }, ErrorCode::invalid_format},
    {"odd_int4_count", [] { return model(tensor("t", 22, {3}, bfield(9, "ab"))); },
     ErrorCode::unsupported},
    {"duplicate_name",
     [] { return model_of_graph(bfield(5, f32_raw("t", 1)) + bfield(5, f32_raw("t", 1))); },
     ErrorCode::invalid_format},
    {"deep_subgraph_nesting", [] { return model_of_graph(nested_graph(40)); },
     ErrorCode::limit_exceeded},
    {"sparse_initializer", [] { return model_of_graph(bfield(15, "")); }, ErrorCode::unsupported},
};

INSTANTIATE_TEST_SUITE_P(Cases, OnnxHostile, ::testing::ValuesIn(kCases),
                         [](const auto& param_info) { return param_info.param.label; });

TEST(OnnxHostileControl, TheEncoderBuildsLoadableModels) {
  test::TempDir dir;
  test::write_file(dir / "data.bin", std::string(16, '\x02'));
  test::write_file(
      dir / "m.onnx",
      model_of_graph(nested_graph(3) +
                     bfield(5, external("e", 4, bfield(13, entry(kLoc, "data.bin"))))));
  auto loader = make_weight_loader();
  auto meta = loader->get_metadata(WeightSource::file(dir / "m.onnx"));
  ASSERT_EQ(meta.tensors.size(), 2u);
  EXPECT_EQ(meta.tensors.at("c").shape, Shape({1}));
  auto t =
      loader->load_tensor(TensorSpec{.name = "e", .source = WeightSource::file(dir / "m.onnx")});
  EXPECT_EQ(t->bytes()[15], std::byte{2});
}

TEST(OnnxProbe, AcceptsModelsAndRejectsGarbage) {
  auto parser = make_onnx_parser();
  auto probe = [&](const std::string& bytes, uint64_t total = 0) {
    return parser->probe(std::as_bytes(std::span(bytes)), total ? total : bytes.size());
  };
  EXPECT_TRUE(probe(model(f32_raw("t", 4))));
  EXPECT_TRUE(probe(vfield(1, 8) + varint(7 << 3 | 2) + varint(100000), 200000));  // big graph
  EXPECT_FALSE(probe(""));
  EXPECT_FALSE(probe("hello world, this is text"));
  EXPECT_FALSE(probe(std::string(64, '\xFF')));
  EXPECT_FALSE(probe(vfield(1, 0) + bfield(7, "")));  // ir_version 0
  EXPECT_FALSE(probe(bfield(7, "") + vfield(1, 8)));  // ir_version not first
  EXPECT_FALSE(probe(vfield(1, 8) + vfield(9, 1)));   // field 9 is no ModelProto field
  EXPECT_FALSE(probe(vfield(1, 8) + varint(7 << 3 | 2) + varint(1000)));  // graph past the end
}

}  // namespace
}  // namespace ballast
