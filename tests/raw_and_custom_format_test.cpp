// Raw (headerless) files with a caller-given layout, and user-registered custom formats that
// load through the same registry, detection and loader path as the built-in ones.
#include <gtest/gtest.h>

#include <cstring>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

TEST(RawFormat, LayoutFromTheSourceOrTheSpec) {
  TempDir dir;
  auto path = dir / "w.bin";
  write_file(path, "HDR!" + f32_bytes({1, 2, 3, 4, 5, 6}));
  WeightSource source = WeightSource::file(path);
  source.format = WeightFormat::raw();
  source.raw_layout = RawLayout{DType::f32, {2, 3}, 4};
  auto loader = make_weight_loader();
  auto meta = loader->get_metadata(source);
  ASSERT_EQ(meta.tensors.count("data"), 1u);
  EXPECT_EQ(meta.tensors["data"].shape, (Shape{2, 3}));
  auto t = loader->load_tensor(TensorSpec{.name = "data", .source = source});
  EXPECT_EQ(t->as<float>()[5], 6.0f);

  write_file(path, f32_bytes({1, 2, 3, 4}));
  WeightSource bare = WeightSource::file(path);
  bare.format = WeightFormat::raw();
  auto from_spec =
      loader->load_tensor(TensorSpec{.shape = {4}, .dtype = DType::f32, .source = bare});
  EXPECT_EQ(from_spec->as<float>()[3], 4.0f);
}

TEST(RawFormat, SizeMismatchSaysByHowMuch) {
  TempDir dir;
  auto path = dir / "w.bin";
  write_file(path, f32_bytes({1, 2, 3}));
  WeightSource source = WeightSource::file(path);
  source.format = WeightFormat::raw();
  source.raw_layout = RawLayout{DType::f32, {2, 2}, 0};
  try {
    make_weight_loader()->get_metadata(source);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::shape_mismatch);
    EXPECT_NE(std::string(e.what()).find("4 bytes missing"), std::string::npos) << e.what();
  }
  auto r = run_command(cli_path() + " inspect --format raw --dtype f32 --shape 2,2 " +
                       shell_quote(path.string()));
  EXPECT_EQ(r.exit_code, 1);
  auto ok = run_command(cli_path() + " hash --json --format raw --dtype f32 --shape 3 " +
                        shell_quote(path.string()));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(nlohmann::json::parse(ok.out)["tensors"]["data"]["shape"], (Shape{3}));
}

// A toy format: "TOY1", u32 count, then per tensor: u8 name length, name, u32 float count,
// floats. It exists only to prove that users can plug a parser in.
class ToyParser final : public FormatParser {
 public:
  WeightFormat format() const override { return WeightFormat::custom("toy"); }
  bool probe(std::span<const std::byte> head, uint64_t) const override {
    return head.size() >= 4 && std::memcmp(head.data(), "TOY1", 4) == 0;
  }
  Index parse(const ParseContext& ctx) const override {
    Index index;
    index.format = format();
    uint64_t pos = 4;
    auto u32 = [&] {
      auto b = ctx.source->read(pos, 4);
      pos += 4;
      uint32_t v;
      std::memcpy(&v, b.data(), 4);
      return v;
    };
    uint32_t count = u32();
    for (uint32_t i = 0; i < count; ++i) {
      auto len = ctx.source->read(pos, 1);
      pos += 1;
      auto name = ctx.source->read(pos, static_cast<uint64_t>(len[0]));
      pos += static_cast<uint64_t>(len[0]);
      TensorEntry e;
      e.name.assign(reinterpret_cast<const char*>(name.data()), name.size());
      e.dtype = DType::f32;
      e.shape = {static_cast<int64_t>(u32())};
      e.data = ctx.source;
      e.offset = pos;
      pos += e.nbytes();
      index.tensors.push_back(std::move(e));
    }
    index.extra = R"({"toy": true})";
    return index;
  }
};

std::string toy_file() {
  std::string out = "TOY1";
  auto put32 = [&](uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); };
  put32(1);
  out += '\x03';
  out += "vec";
  put32(3);
  out += f32_bytes({1.5f, 2.5f, 3.5f});
  return out;
}

TEST(CustomFormat, RegisteredParserLoadsThroughTheLoaderAndCli) {
  register_format_parser(std::make_shared<ToyParser>());
  TempDir dir;
  auto path = dir / "model.toy";
  write_file(path, toy_file());
  auto loader = make_weight_loader();
  auto meta = loader->get_metadata(WeightSource::file(path));
  EXPECT_EQ(meta.format, WeightFormat::custom("toy"));
  EXPECT_EQ(nlohmann::json::parse(meta.extra)["toy"], true);
  auto t = loader->load_tensor(TensorSpec{
      .name = "vec", .source = WeightSource::file(path), .transformations = {Cast{DType::f16}}});
  EXPECT_EQ(t->dtype(), DType::f16);
  EXPECT_EQ(t->shape(), (Shape{3}));
  auto caps = loader->capabilities();
  EXPECT_NE(std::find(caps.formats.begin(), caps.formats.end(), WeightFormat::custom("toy")),
            caps.formats.end());
}

TEST(CustomFormat, EntriesOutsideTheFileAreRefusedWhoeverWroteTheParser) {
  register_format_parser(std::make_shared<ToyParser>());
  TempDir dir;
  auto path = dir / "model.toy";
  std::string bytes = toy_file();
  bytes.resize(bytes.size() - 4);  // the parser's last tensor now runs past the end
  write_file(path, bytes);
  try {
    make_weight_loader()->get_metadata(WeightSource::file(path));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_format);
    EXPECT_EQ(e.context().tensor, "vec");
  }
}

}  // namespace
}  // namespace ballast::test
