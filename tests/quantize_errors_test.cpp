// Bad Quantize specs and hostile quantized checkpoints: every case is a clear ballast::Error
// with the right code, naming the step or the part, raised before any kernel runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

std::string i32_bytes(size_t n) { return std::string(n * 4, '\0'); }

class QuantizeErrors : public testing::Test {
 protected:
  WeightSource source_of(const std::vector<StTensor>& tensors) {
    bytes_.push_back(std::make_shared<std::string>(safetensors_file(tensors)));
    const std::string& b = *bytes_.back();
    return WeightSource::memory(
        MemorySource{std::as_bytes(std::span(b.data(), b.size())), bytes_.back(), std::nullopt});
  }
  WeightSource weights() {
    std::vector<float> w(8 * 64);
    for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(static_cast<float>(i));
    std::vector<float> nan_w = w;
    nan_w[17] = NAN;
    return source_of({{"w", "F32", {8, 64}, f32_bytes(w)},
                      {"cube", "F32", {2, 4, 64}, f32_bytes(std::vector<float>(512, 1.0f))},
                      {"ids", "I32", {8, 64}, i32_bytes(512)},
                      {"nan", "F32", {8, 64}, f32_bytes(nan_w)}});
  }
  // Loads `tensor` with `steps`, expecting an error with `code` whose text holds `needle`.
  void expect_error(const std::string& tensor, const std::string& steps, ErrorCode code,
                    const std::string& needle) {
    try {
      loader_->load_tensor(TensorSpec{
          .name = tensor, .source = weights(), .transformations = parse_transformations(steps)});
      ADD_FAILURE() << steps << " loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("tensor: '" + tensor + "'"), std::string::npos)
          << e.what();
    }
  }

  std::vector<std::shared_ptr<std::string>> bytes_;
  std::unique_ptr<WeightLoader> loader_ = make_weight_loader();
};

TEST_F(QuantizeErrors, BadStepsNameTheStep) {
  expect_error("cube", "quantize:int8", ErrorCode::shape_mismatch, "quantize:int8:sym");
  expect_error("cube", "quantize:int8", ErrorCode::shape_mismatch, "2-D weight");
  expect_error("w", "quantize:int4:48", ErrorCode::shape_mismatch, "group size 48 does not divide");
  expect_error("w", "quantize:int4:0", ErrorCode::invalid_argument, "must be positive");
  expect_error("w", "quantize:gptq:5:32", ErrorCode::unsupported, "2, 3, 4 or 8 bits");
  expect_error("w", "quantize:gptq:3:32", ErrorCode::shape_mismatch,
               "out_features 8 is not a multiple of 32");
  expect_error("w", "quantize:awq:8", ErrorCode::unsupported, "awq supports 4 bits");
  expect_error("w", "quantize:gptq:8:64,transpose:0:1", ErrorCode::unsupported,
               "quantize must be the last step");
  expect_error("ids", "quantize:fp8:e4m3", ErrorCode::dtype_mismatch, "needs a float tensor");
  expect_error("nan", "quantize:int8", ErrorCode::unsupported, "non-finite");
  // gptq / awq pack along out_features too: 8 rows are fine at 4 bits, 8 bits needs 4 | 8.
  expect_error("w", "slice:0:0:6,quantize:gptq:4:64", ErrorCode::shape_mismatch,
               "out_features 6 is not a multiple of 8");
}

TEST_F(QuantizeErrors, SpecShapeAndDtypeDescribeTheMainPart) {
  auto q = loader_->load_tensor(
      TensorSpec{.name = "w",
                 .shape = {8, 8},
                 .dtype = DType::i32,
                 .source = weights(),
                 .transformations = parse_transformations("quantize:gptq:4:64")});
  EXPECT_EQ(q->parts().size(), 3u);
}

TEST_F(QuantizeErrors, HostileCheckpointsAreRefused) {
  using Scheme = QuantizeConfig::Scheme;
  auto expect = [&](const WeightSource& s, Scheme scheme, ErrorCode code,
                    const std::string& needle) {
    try {
      load_dequantized(*loader_, {.source = s, .base = "l", .scheme = scheme});
      ADD_FAILURE() << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const std::string f16_scales(2 * 64 * 2, '\0');
  // GPTQ 4-bit, in = 128, out = 64, group 64.
  auto gptq = [&](Shape qweight, Shape qzeros, Shape scales, std::optional<std::string> g_idx) {
    std::vector<StTensor> t = {
        {"l.qweight", "I32", qweight, i32_bytes(static_cast<size_t>(qweight[0] * qweight[1]))},
        {"l.qzeros", "I32", qzeros, i32_bytes(static_cast<size_t>(qzeros[0] * qzeros[1]))},
        {"l.scales", "F16", scales,
         std::string(static_cast<size_t>(scales[0] * scales[1] * 2), '\0')}};
    if (g_idx) t.push_back({"l.g_idx", "I32", {128}, *g_idx});
    return source_of(t);
  };
  EXPECT_EQ(load_dequantized(*loader_,
                             {.source = gptq({16, 64}, {2, 8}, {2, 64}, std::nullopt), .base = "l"})
                ->shape(),
            (Shape{64, 128}));
  expect(gptq({16, 64}, {2, 8}, {2, 32}, std::nullopt), Scheme::gptq, ErrorCode::shape_mismatch,
         "l.qweight");
  expect(gptq({16, 64}, {2, 5}, {2, 64}, std::nullopt), Scheme::gptq, ErrorCode::shape_mismatch,
         "2, 3, 4 or 8 bits");
  expect(gptq({16, 64}, {2, 6}, {2, 64}, std::nullopt), Scheme::gptq, ErrorCode::shape_mismatch,
         "16 rows do not hold whole 3-bit values");
  std::string bad_g_idx = i32_bytes(128);
  bad_g_idx[40] = 9;  // element 10 in group 9 of 2
  expect(gptq({16, 64}, {2, 8}, {2, 64}, bad_g_idx), Scheme::gptq, ErrorCode::shape_mismatch,
         "entry 10 is 9");
  expect(gptq({16, 64}, {2, 8}, {2, 64}, std::nullopt), Scheme::awq, ErrorCode::shape_mismatch,
         "l.scales");
  expect(source_of({{"l.qweight", "I32", {16, 64}, i32_bytes(1024)}}), Scheme::gptq,
         ErrorCode::not_found, "l.{qzeros}");
  expect(source_of({{"l.weight", "F32", {2, 2}, f32_bytes({1, 2, 3, 4})},
                    {"l.weight_scale", "F32", {}, f32_bytes({1})}}),
         Scheme::fp8, ErrorCode::dtype_mismatch, "f8_e4m3 or f8_e5m2");
  expect(source_of({{"l.weight", "F8_E4M3", {2, 2}, std::string(4, '\0')},
                    {"l.weight_scale", "F32", {3}, f32_bytes({1, 2, 3})}}),
         Scheme::fp8, ErrorCode::shape_mismatch, "l.weight_scale");
  // An empty FP8 weight with a per-tensor scale is an empty tensor, not a division by zero.
  EXPECT_EQ(load_dequantized(*loader_,
                             {.source = source_of({{"l.weight", "F8_E4M3", {0, 4}, ""},
                                                   {"l.weight_scale", "F32", {}, f32_bytes({2})}}),
                              .base = "l",
                              .scheme = Scheme::fp8})
                ->shape(),
            (Shape{0, 4}));
  expect(source_of({{"l.weight", "F8_E4M3", {2, 2}, std::string(4, '\0')},
                    {"l.weight_scale", "F32", {0}, ""}}),
         Scheme::fp8, ErrorCode::shape_mismatch, "l.weight_scale");
  EXPECT_THROW(load_dequantized(*loader_, {.source = gptq({16, 64}, {2, 8}, {2, 64}, std::nullopt),
                                           .base = "l",
                                           .dtype = DType::i8}),
               Error);
}

}  // namespace
}  // namespace ballast::test
