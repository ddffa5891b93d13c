// All 256 code points of f8_e4m3 (OCP e4m3fn) and f8_e5m2 against value tables built in
// Python from the OCP FP8 spec's bit fields, both ways: decoding every code, encoding every
// finite value back to its code, and rounding the midpoints between neighbouring codes (ties to
// the even code, just above and below to the nearer one) plus overflow (e4m3 saturates, e5m2
// goes to infinity). The quantize:fp8 step relies on exactly these conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "ballast/ballast.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

constexpr const char* kTables = R"PY(
import sys, numpy as np
out = sys.argv[1]
np.arange(256, dtype=np.uint8).tofile(out + "/codes.bin")
def table(e, m, bias, ieee):
    vals = []
    for c in range(256):
        s, ex, mant = c >> 7, (c >> m) & ((1 << e) - 1), c & ((1 << m) - 1)
        if ieee and ex == (1 << e) - 1: v = np.inf if mant == 0 else np.nan
        elif not ieee and ex == (1 << e) - 1 and mant == (1 << m) - 1: v = np.nan
        elif ex == 0: v = mant * 2.0 ** (1 - bias - m)
        else: v = (1 + mant / 2 ** m) * 2.0 ** (ex - bias)
        vals.append(-v if s else v)
    return np.array(vals, dtype=np.float32)
for name, e, m, bias, ieee in (("e4m3", 4, 3, 7, False), ("e5m2", 5, 2, 15, True)):
    t = table(e, m, bias, ieee)
    t.tofile(out + f"/{name}_values.bin")
    finite = [c for c in range(127) if np.isfinite(t[c])]          # ascending positive codes
    ins, outs = [], []
    for lo, hi in zip(finite, finite[1:]):
        mid = (np.float64(t[lo]) + np.float64(t[hi])) / 2
        mid32 = np.float32(mid); assert mid32 == mid
        for sign in (1, -1):
            s = 0x80 if sign < 0 else 0
            ins += [sign * mid32, sign * np.nextafter(mid32, np.float32(np.inf)), sign * np.nextafter(mid32, np.float32(0))]
            outs += [(lo if lo % 2 == 0 else hi) | s, hi | s, lo | s]
    top = finite[-1]
    big = np.float32(1e6)
    ins += [big, -big]
    outs += ([top, top | 0x80] if not ieee else [0x7C, 0xFC])
    np.array(ins, dtype=np.float32).tofile(out + f"/{name}_mid_in.bin")
    np.array(outs, dtype=np.uint8).tofile(out + f"/{name}_mid_out.bin")
)PY";

class Fp8CodePoints : public testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    BALLAST_REQUIRE_PYTHON("numpy");
    run_python(kTables, {dir_.path().string()});
  }
  std::string prefix() const { return GetParam() == DType::f8_e4m3 ? "e4m3" : "e5m2"; }
  TensorRef load(const std::string& file, DType stored, int64_t n, DType to) {
    WeightSource source = WeightSource::file(dir_ / file);
    source.format = WeightFormat::raw();
    source.raw_layout = RawLayout{stored, {n}, 0};
    return loader_->load_tensor(
        TensorSpec{.name = "data", .source = source, .transformations = {Cast{to}}});
  }
  template <typename T>
  std::vector<T> values(const std::string& file) const {
    std::string bytes = read_file(dir_ / file);
    std::vector<T> v(bytes.size() / sizeof(T));
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  }

  TempDir dir_;
  std::unique_ptr<WeightLoader> loader_ = make_weight_loader();
};

TEST_P(Fp8CodePoints, EveryCodeDecodesAndEncodesAsTheSpecSays) {
  const auto table = values<float>(prefix() + "_values.bin");
  ASSERT_EQ(table.size(), 256u);
  const TensorRef decoded_tensor = load("codes.bin", GetParam(), 256, DType::f32);
  const TensorRef encoded_tensor = load(prefix() + "_values.bin", DType::f32, 256, GetParam());
  const auto decoded = decoded_tensor->as<float>();
  const auto encoded = encoded_tensor->as<uint8_t>();
  for (int c = 0; c < 256; ++c) {
    if (std::isnan(table[c])) {
      EXPECT_TRUE(std::isnan(decoded[c])) << c;
      EXPECT_TRUE(std::isnan(table[encoded[c]])) << c;
      continue;
    }
    EXPECT_EQ(std::memcmp(&decoded[c], &table[c], 4), 0) << "code " << c << ": " << decoded[c];
    EXPECT_EQ(encoded[c], c) << table[c];
  }
}

TEST_P(Fp8CodePoints, MidpointsRoundToEvenAndOverflowPerFormat) {
  const auto in = values<float>(prefix() + "_mid_in.bin");
  const auto want = values<uint8_t>(prefix() + "_mid_out.bin");
  const TensorRef rounded =
      load(prefix() + "_mid_in.bin", DType::f32, static_cast<int64_t>(in.size()), GetParam());
  const auto got = rounded->as<uint8_t>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(int(got[i]), int(want[i])) << "value " << in[i];
}

INSTANTIATE_TEST_SUITE_P(Formats, Fp8CodePoints, testing::Values(DType::f8_e4m3, DType::f8_e5m2),
                         [](const auto& param_info) {
                           return std::string(dtype_name(param_info.param));
                         });

}  // namespace
}  // namespace ballast::test
