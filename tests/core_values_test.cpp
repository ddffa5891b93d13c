// The small value types of the public API: dtype table and names, devices, formats, errors and
// the --transform syntax.
#include <gtest/gtest.h>

#include "ballast/ballast.hpp"

namespace ballast {
namespace {

TEST(DType, NamesRoundTripAndSizesFollowOneRule) {
  for (DType d : all_dtypes()) {
    EXPECT_EQ(parse_dtype(dtype_name(d)), d) << dtype_name(d);
    const auto& info = dtype_info(d);
    EXPECT_EQ(dtype_bytes_for(d, info.block_elements * 3), info.block_bytes * 3u);
  }
  EXPECT_EQ(dtype_bytes_for(DType::i4, 3), std::nullopt);  // half a byte
  EXPECT_EQ(dtype_bytes_for(DType::f6_e2m3, 8), 6u);
  EXPECT_EQ(dtype_bytes_for(DType::q4_k, 512), 288u);
  EXPECT_EQ(dtype_bytes_for(DType::f64, UINT64_MAX / 4), std::nullopt);  // overflow
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("BOOL"), DType::boolean);
  EXPECT_EQ(parse_dtype("f3"), std::nullopt);
  EXPECT_EQ(dtype_element_size(DType::u4), 0u);
  EXPECT_EQ(dtype_element_size(DType::c128), 16u);
}

TEST(Device, NamesRoundTrip) {
  EXPECT_EQ(to_string(Device::cpu()), "cpu");
  EXPECT_EQ(to_string(Device::cuda(1)), "cuda:1");
  EXPECT_EQ(parse_device("rocm:2"), Device::rocm(2));
  EXPECT_EQ(parse_device("cuda"), Device::cuda(0));
  EXPECT_EQ(parse_device("cuda:-1"), std::nullopt);
  EXPECT_EQ(parse_device("tpu"), std::nullopt);
}

TEST(Format, NamesRoundTrip) {
  EXPECT_EQ(parse_format("gguf"), WeightFormat::gguf());
  EXPECT_EQ(to_string(WeightFormat::custom("mine")), "mine");
  EXPECT_EQ(parse_format("mine"), WeightFormat::custom("mine"));
}

TEST(ErrorText, CarriesCodeAndContext) {
  Error e(ErrorCode::shape_mismatch, "bad", {.source = "f.st", .expected = "[2]", .actual = "[3]"});
  e.with_tensor("w").with_source("ignored: already set");
  EXPECT_STREQ(e.what(),
               "shape_mismatch: bad (source: f.st, tensor: 'w', expected: [2], actual: [3])");
  EXPECT_EQ(error_code_name(ErrorCode::limit_exceeded), "limit_exceeded");
}

TEST(TransformSyntax, ParsesEveryStepAndPrintsItBack) {
  const std::string list =
      "transpose:0:1,reshape:2:-1,cast:f16,slice:0::4,slice:1:-2:,scale:0.5,quantize:int8:asym,"
      "quantize:int4:128,quantize:fp8:e5m2,quantize:gptq:4:128:desc_act,quantize:awq:4:128:zp,"
      "quantize:awq:4:64";
  auto steps = parse_transformations(list);
  ASSERT_EQ(steps.size(), 12u);
  std::string printed;
  for (const auto& s : steps) printed += (printed.empty() ? "" : ",") + to_string(s);
  EXPECT_EQ(printed, list);
  const auto& slice = std::get<Slice>(steps[3]);
  EXPECT_EQ(slice.start, std::nullopt);
  EXPECT_EQ(slice.end, 4);
  EXPECT_EQ(to_string(parse_transformations("quantize:awq:4:zp")[0]), "quantize:awq:4:128:zp");
  for (const char* bad : {"transpose:0", "cast:f99", "slice:0:1", "scale:x", "rotate:1",
                          "quantize:int3:1", "quantize:awq:4:zp:64", "quantize:awq:4:64:zp:zp"})
    EXPECT_THROW(parse_transformations(bad), Error) << bad;
}

}  // namespace
}  // namespace ballast
