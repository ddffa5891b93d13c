// One wording per kind of error, whatever the format (util/error_text.hpp): a crossed Limits
// bound reads "<what> <value> exceeds the <limit> limit of <max>", data past the end of its
// file "truncated: expected N bytes, file has M".
#include <gtest/gtest.h>

#include <cstring>

#include "ballast/error.hpp"
#include "ballast/loader.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"
#include "util/error_text.hpp"

namespace ballast {
namespace {

Error error_of(const std::filesystem::path& path, Limits limits = {}) {
  try {
    (void)make_weight_loader({.limits = limits})->get_metadata(WeightSource::file(path));
  } catch (const Error& e) {
    return e;
  }
  return Error(ErrorCode::invalid_argument, "did not throw");
}

TEST(ErrorWording, LimitsReadTheSameInEveryFormat) {
  EXPECT_EQ(limit_message("rank", 9, "max_dims", 8), "rank 9 exceeds the max_dims limit of 8");
  EXPECT_EQ(limit_message("tensor count", std::nullopt, "max_tensors", 4),
            "tensor count exceeds the max_tensors limit of 4");
  test::TempDir dir;
  test::write_file(dir / "m.safetensors",
                   test::safetensors_file({{"w", "F32", {1, 1, 1}, test::f32_bytes({1.0f})}}));
  std::string gguf = "GGUF";
  const uint32_t version = 3;
  const uint64_t counts[2] = {5, 0};  // five tensors, no KV pairs
  gguf.append(reinterpret_cast<const char*>(&version), 4);
  gguf.append(reinterpret_cast<const char*>(counts), 16);
  test::write_file(dir / "m.gguf", gguf);

  const Error rank = error_of(dir / "m.safetensors", {.max_dims = 2});
  EXPECT_EQ(rank.code(), ErrorCode::limit_exceeded);
  EXPECT_EQ(rank.message(), "rank 3 exceeds the max_dims limit of 2");
  const Error count = error_of(dir / "m.gguf", {.max_tensors = 4});
  EXPECT_EQ(count.code(), ErrorCode::limit_exceeded);
  EXPECT_EQ(count.message(), "tensor count 5 exceeds the max_tensors limit of 4");
}

TEST(ErrorWording, TruncationReadsTheSameInEveryFormat) {
  test::TempDir dir;
  const std::string whole =
      test::safetensors_file({{"w", "F32", {4}, test::f32_bytes({1, 2, 3, 4})}});
  test::write_file(dir / "m.safetensors", whole.substr(0, whole.size() - 4));
  const Error e = error_of(dir / "m.safetensors");
  EXPECT_EQ(e.code(), ErrorCode::invalid_format);
  EXPECT_TRUE(e.message().starts_with("truncated: expected ")) << e.what();
}

}  // namespace
}  // namespace ballast
