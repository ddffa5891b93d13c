// Casts and view transformations on load, checked against Debian's python3-torch and numpy:
// f32 -> f16 / bf16 rounding on random and edge values, bf16 / f16 -> f32, transpose, slice,
// reshape and a composed chain (slice -> transpose -> cast), all through the loader.
#include <gtest/gtest.h>

#include "ballast/ballast.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

constexpr const char* kReference = R"PY(
import sys, numpy as np, torch
out = sys.argv[1]
rng = np.random.default_rng(7)
special = np.array([0.0, -0.0, 1.0, -1.0, 65504.0, 65520.0, 65519.99, 1e-8, 6e-8, 3e-5, 1e38, 3.4e38,
                    np.inf, -np.inf, np.nan, 1.00048828125, 1.001953125, 0.1, 1/3], dtype=np.float32)
vals = np.concatenate([special, (rng.standard_normal(4000) * 10).astype(np.float32),
                       rng.standard_normal(4000).astype(np.float32) * np.float32(1e-5)])
vals.tofile(out + "/f32.bin")
t = torch.from_numpy(vals)
t.half().numpy().tofile(out + "/f16.bin")
# NaN payloads differ between torch builds; ballast writes the quiet NaN 0x7fc0 with the sign kept.
bf = t.bfloat16().view(torch.int16).numpy().view(np.uint16).copy()
bf[np.isnan(vals)] = 0x7FC0 | (np.signbit(vals[np.isnan(vals)]).astype(np.uint16) << 15)
bf.tofile(out + "/bf16.bin")
torch.from_numpy(bf.view(np.int16)).view(torch.bfloat16).float().numpy().tofile(out + "/bf16_f32.bin")
t.half().float().numpy().tofile(out + "/f16_f32.bin")
a = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5) * np.float32(0.37)
a.tofile(out + "/a.bin")
np.ascontiguousarray(a.transpose(2, 1, 0)).tofile(out + "/a_t02.bin")
np.ascontiguousarray(a[:, 1:3, :]).tofile(out + "/a_s1.bin")
np.ascontiguousarray(a[-2:]).tofile(out + "/a_s0.bin")
chain = torch.from_numpy(np.ascontiguousarray(a[:, :, 1:4].swapaxes(0, 2)))
chain.half().numpy().tofile(out + "/a_chain.bin")
(torch.from_numpy(a) * 0.5).numpy().tofile(out + "/a_scaled.bin")
)PY";

class TransformReference : public testing::Test {
 protected:
  void SetUp() override {
    BALLAST_REQUIRE_PYTHON("torch");
    run_python(kReference, {dir_.path().string()});
  }
  TensorRef load(const std::string& file, DType dtype, Shape shape, const std::string& steps) {
    WeightSource source = WeightSource::file(dir_ / file);
    source.format = WeightFormat::raw();
    source.raw_layout = RawLayout{dtype, std::move(shape), 0};
    return loader_->load_tensor(TensorSpec{
        .name = "data", .source = source, .transformations = parse_transformations(steps)});
  }
  // Compared as digests, so a failure prints two short strings instead of the buffers.
  std::string bytes_of(const Tensor& t) const { return sha256_hex(t); }
  std::string file(const std::string& name) const {
    std::string bytes = read_file(dir_ / name);
    return sha256_hex(std::as_bytes(std::span(bytes.data(), bytes.size())));
  }

  TempDir dir_;
  std::unique_ptr<WeightLoader> loader_ = make_weight_loader();
};

constexpr int64_t kValues = 19 + 8000;

TEST_F(TransformReference, FloatCastsMatchTorch) {
  EXPECT_EQ(bytes_of(*load("f32.bin", DType::f32, {kValues}, "cast:f16")), file("f16.bin"));
  EXPECT_EQ(bytes_of(*load("f32.bin", DType::f32, {kValues}, "cast:bf16")), file("bf16.bin"));
  EXPECT_EQ(bytes_of(*load("bf16.bin", DType::bf16, {kValues}, "cast:f32")), file("bf16_f32.bin"));
  EXPECT_EQ(bytes_of(*load("f16.bin", DType::f16, {kValues}, "cast:f32")), file("f16_f32.bin"));
}

TEST_F(TransformReference, ViewStepsMatchNumpy) {
  auto t = load("a.bin", DType::f32, {3, 4, 5}, "transpose:0:2");
  EXPECT_EQ(t->shape(), (Shape{5, 4, 3}));
  EXPECT_EQ(bytes_of(*t), file("a_t02.bin"));
  EXPECT_EQ(bytes_of(*load("a.bin", DType::f32, {3, 4, 5}, "slice:1:1:3")), file("a_s1.bin"));
  EXPECT_EQ(bytes_of(*load("a.bin", DType::f32, {3, 4, 5}, "slice:0:-2:")), file("a_s0.bin"));
  auto chain = load("a.bin", DType::f32, {3, 4, 5}, "slice:2:1:4,transpose:0:2,cast:f16");
  EXPECT_EQ(chain->shape(), (Shape{3, 4, 3}));
  EXPECT_EQ(bytes_of(*chain), file("a_chain.bin"));
  auto reshaped = load("a.bin", DType::f32, {3, 4, 5}, "reshape:12:-1");
  EXPECT_EQ(reshaped->shape(), (Shape{12, 5}));
  EXPECT_EQ(bytes_of(*reshaped), file("a.bin"));
  EXPECT_EQ(bytes_of(*load("a.bin", DType::f32, {3, 4, 5}, "scale:0.5")), file("a_scaled.bin"));
}

TEST_F(TransformReference, BadStepsFailBeforeReading) {
  try {
    load("a.bin", DType::f32, {3, 4, 5}, "transpose:0:3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::shape_mismatch);
    EXPECT_NE(std::string(e.what()).find("transpose:0:3"), std::string::npos);
  }
  EXPECT_THROW(load("a.bin", DType::f32, {3, 4, 5}, "reshape:7:-1"), Error);
  try {
    load("a.bin", DType::i32, {3, 4, 5}, "scale:2");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::dtype_mismatch);
  }
}

}  // namespace
}  // namespace ballast::test
