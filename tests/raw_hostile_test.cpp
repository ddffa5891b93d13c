// Hostile headerless (raw) inputs: the layout comes from the caller, the bytes from anyone, so
// every disagreement between them must fail with its own ErrorCode, through the loader, before
// a byte is read past the file.
#include <gtest/gtest.h>

#include <limits>

#include "ballast/ballast.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

struct Hostile {
  std::string name;
  std::string bytes;
  std::optional<RawLayout> layout;
  ErrorCode code;
  Limits limits = {};

  TensorSpec spec = {};  // the shape and dtype the caller expects, when set
};

void PrintTo(const Hostile& h, std::ostream* os) { *os << h.name; }

std::vector<Hostile> hostile_raw() {
  using E = ErrorCode;
  const std::string f32x4(16, '\1');
  Limits small_tensor;
  small_tensor.max_tensor_bytes = 8;
  Shape many_dims(65, 1);
  many_dims[0] = 4;
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  return {
      {"no_layout", f32x4, std::nullopt, E::invalid_argument},
      {"negative_dim", f32x4, RawLayout{DType::f32, {-4}, 0}, E::invalid_argument},
      {"element_count_overflows", f32x4, RawLayout{DType::f32, {1LL << 40, 1LL << 40}, 0},
       E::invalid_argument},
      {"byte_count_overflows", f32x4, RawLayout{DType::f64, {1LL << 61}, 0}, E::invalid_argument},
      {"odd_int4_count", std::string(2, '\1'), RawLayout{DType::i4, {3}, 0}, E::invalid_argument},
      {"offset_past_the_end", f32x4, RawLayout{DType::f32, {1}, 17}, E::invalid_format},
      {"offset_at_uint64_max", f32x4, RawLayout{DType::f32, {1}, kMax}, E::invalid_format},
      {"too_few_bytes", f32x4, RawLayout{DType::f32, {5}, 0}, E::shape_mismatch},
      {"too_many_bytes", f32x4, RawLayout{DType::f32, {3}, 0}, E::shape_mismatch},
      {"offset_leaves_too_few", f32x4, RawLayout{DType::f32, {4}, 4}, E::shape_mismatch},
      {"empty_file", "", RawLayout{DType::f32, {1}, 0}, E::shape_mismatch},
      {"too_many_dims", f32x4, RawLayout{DType::f32, many_dims, 0}, E::limit_exceeded},
      {"larger_than_max_tensor_bytes", f32x4, RawLayout{DType::f32, {4}, 0}, E::limit_exceeded,
       small_tensor},
      {"spec_wants_another_shape",
       f32x4,
       RawLayout{DType::f32, {4}, 0},
       E::shape_mismatch,
       {},
       TensorSpec{.shape = Shape{2, 3}}},
      {"spec_wants_another_dtype",
       f32x4,
       RawLayout{DType::f32, {4}, 0},
       E::dtype_mismatch,
       {},
       TensorSpec{.dtype = DType::f16}},
  };
}

class RawHostile : public testing::TestWithParam<Hostile> {};

TEST_P(RawHostile, FailsWithItsOwnCode) {
  const Hostile& h = GetParam();
  TempDir dir;
  write_file(dir / "w.bin", h.bytes);
  WeightSource source = WeightSource::file(dir / "w.bin");
  source.format = WeightFormat::raw();
  source.raw_layout = h.layout;
  WeightLoaderConfig config;
  config.limits = h.limits;
  TensorSpec spec = h.spec;
  spec.name = "data";
  spec.source = source;
  try {
    make_weight_loader(config)->load_tensor(spec);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), h.code) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Table, RawHostile, testing::ValuesIn(hostile_raw()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace ballast::test
