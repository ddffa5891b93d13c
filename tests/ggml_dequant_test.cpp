// ggml dequantization kernels: hand-built blocks with hand-computed values for every kernel,
// an exhaustive check of the f16 scale conversion, size checks, and the golden corpus's
// gguf-py dequantization hashes computed straight from the stored blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "ballast/error.hpp"
#include "ballast/hash.hpp"
#include "support/test_support.hpp"
#include "transform/ggml_dequant.hpp"

namespace ballast {
namespace {

std::vector<float> dequant(DType type, const std::vector<uint8_t>& blocks) {
  const DTypeInfo& info = dtype_info(type);
  EXPECT_EQ(blocks.size() % info.block_bytes, 0u);
  std::vector<float> out(blocks.size() / info.block_bytes * info.block_elements);
  ggml_dequantize_to_f32(type, std::as_bytes(std::span(blocks)), out);
  return out;
}

void put16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v);
  b[at + 1] = static_cast<uint8_t>(v >> 8);
}

constexpr uint16_t kHalfOne = 0x3C00, kHalfHalf = 0x3800, kHalfTwo = 0x4000;
constexpr uint16_t kHalfQuarter = 0x3400, kHalfMinusOne = 0xBC00;

TEST(GgmlDequant, Q4_0) {
  std::vector<uint8_t> b(18);
  put16(b, 0, kHalfHalf);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  const auto y = dequant(DType::q4_0, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j - 8) * 0.5f);
    EXPECT_EQ(y[j + 16], (7 - j) * 0.5f);
  }
}

TEST(GgmlDequant, Q4_1) {
  std::vector<uint8_t> b(20);
  put16(b, 0, kHalfHalf);
  put16(b, 2, kHalfMinusOne);
  for (int j = 0; j < 16; ++j) b[4 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  const auto y = dequant(DType::q4_1, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j * 0.5f - 1);
    EXPECT_EQ(y[j + 16], (15 - j) * 0.5f - 1);
  }
}

TEST(GgmlDequant, Q5_0) {
  std::vector<uint8_t> b(22);
  put16(b, 0, kHalfOne);
  b[2] = 0x01;  // fifth bit of element 0
  b[5] = 0x80;  // fifth bit of element 31
  b[6 + 3] = 0x5A;
  const auto y = dequant(DType::q5_0, b);
  EXPECT_EQ(y[0], 0.0f);     // (0 | 16) - 16
  EXPECT_EQ(y[1], -16.0f);   // (0 | 0) - 16
  EXPECT_EQ(y[3], -6.0f);    // 0xA - 16
  EXPECT_EQ(y[19], -11.0f);  // 0x5 - 16
  EXPECT_EQ(y[16], -16.0f);
  EXPECT_EQ(y[31], 0.0f);
}

TEST(GgmlDequant, Q5_1) {
  std::vector<uint8_t> b(24);
  put16(b, 0, kHalfTwo);
  put16(b, 2, kHalfHalf);
  b[4 + 2] = 0x01;  // bit 16: fifth bit of element 16
  b[8] = 0x21;
  const auto y = dequant(DType::q5_1, b);
  EXPECT_EQ(y[0], 2.5f);    // 1 * 2 + 0.5
  EXPECT_EQ(y[16], 36.5f);  // (2 | 16) * 2 + 0.5
  EXPECT_EQ(y[1], 0.5f);
}

TEST(GgmlDequant, Q8_0) {
  std::vector<uint8_t> b(34);
  put16(b, 0, kHalfQuarter);
  for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
  b[2 + 31] = 0x80;  // -128
  const auto y = dequant(DType::q8_0, b);
  for (int j = 0; j < 31; ++j) EXPECT_EQ(y[j], (j - 16) * 0.25f);
  EXPECT_EQ(y[31], -32.0f);
}

TEST(GgmlDequant, Q2_K) {
  std::vector<uint8_t> b(84);
  b[0] = 0x21;       // group 0: scale 1, min 2
  b[1] = 0x13;       // group 1: scale 3, min 1
  b[2] = 0x02;       // group 2: scale 2
  b[6] = 0x05;       // group 6: scale 5
  b[8] = 0x44;       // group 8: scale 4, min 4
  b[16 + 0] = 0xE4;  // quants of element 0, 32, 64, 96: 0, 1, 2, 3
  b[16 + 16] = 0x03;
  b[16 + 32] = 0x02;
  put16(b, 80, kHalfOne);
  put16(b, 82, kHalfHalf);
  const auto y = dequant(DType::q2_k, b);
  EXPECT_EQ(y[0], -1.0f);   // 1 * 0 - 0.5 * 2
  EXPECT_EQ(y[16], 8.5f);   // 3 * 3 - 0.5 * 1
  EXPECT_EQ(y[32], 2.0f);   // 2 * 1 - 0
  EXPECT_EQ(y[96], 15.0f);  // 5 * 3
  EXPECT_EQ(y[128], 6.0f);  // 4 * 2 - 0.5 * 4
  EXPECT_EQ(y[1], -1.0f);   // 1 * 0 - 1
  EXPECT_EQ(y[255], 0.0f);
}

TEST(GgmlDequant, Q3_K) {
  std::vector<uint8_t> b(110);
  uint8_t* hmask = b.data();
  uint8_t* qs = b.data() + 32;
  uint8_t* sc = b.data() + 96;
  // 6-bit scales (stored + 32): group 0 -> 1, group 1 -> 0, group 5 -> -32, group 9 -> 8.
  sc[0] = 0x01;         // group 0 low nibble 1
  sc[8] = 0x02;         // group 0 high bits 2 (33 - 32 = 1)
  sc[1] = 0x80;         // group 1 low nibble 0, group 9 low nibble 8
  sc[9] = 0x02 | 0x20;  // group 1 high bits 2 (32 -> 0), group 9 high bits 2 (40 -> 8)
  put16(b, 108, kHalfOne);
  qs[0] = 0x03;
  hmask[0] = 0x01;
  qs[16] = 0x10;     // element 80 (group 5): quant 1
  hmask[16] = 0x14;  // element 80 high bit (bit 2), element 144 high bit (bit 4)
  qs[48] = 0x02;     // element 144 (group 9): quant 2
  const auto y = dequant(DType::q3_k, b);
  EXPECT_EQ(y[0], 3.0f);      // 1 * (3 - 0)
  EXPECT_EQ(y[1], -4.0f);     // 1 * (0 - 4)
  EXPECT_EQ(y[16], 0.0f);     // scale 0
  EXPECT_EQ(y[80], -32.0f);   // -32 * (1 - 0)
  EXPECT_EQ(y[144], 16.0f);   // 8 * (2 - 0)
  EXPECT_EQ(y[145], -32.0f);  // 8 * (0 - 4)
}

TEST(GgmlDequant, Q4_K) {
  std::vector<uint8_t> b(144);
  put16(b, 0, kHalfOne);
  put16(b, 2, kHalfHalf);
  uint8_t* sc = b.data() + 4;
  uint8_t* qs = b.data() + 16;
  sc[0] = 2;     // group 0 scale
  sc[4] = 4;     // group 0 min
  sc[1] = 0x81;  // group 1 scale 1; group 5 scale high bits 2
  sc[5] = 0x40;  // group 1 min 0; group 5 min high bits 1
  sc[9] = 0x53;  // group 5 scale low 3 (-> 35), min low 5 (-> 21)
  qs[0] = 0x57;
  qs[64] = 0x20;
  const auto y = dequant(DType::q4_k, b);
  EXPECT_EQ(y[0], 12.0f);     // 2 * 7 - 0.5 * 4
  EXPECT_EQ(y[32], 5.0f);     // 1 * 5 - 0
  EXPECT_EQ(y[160], 59.5f);   // 35 * 2 - 0.5 * 21
  EXPECT_EQ(y[161], -10.5f);  // 35 * 0 - 10.5
}

TEST(GgmlDequant, Q5_K) {
  std::vector<uint8_t> b(176);
  put16(b, 0, kHalfOne);
  put16(b, 2, kHalfOne);
  uint8_t* sc = b.data() + 4;
  uint8_t* qh = b.data() + 16;
  uint8_t* qs = b.data() + 48;
  sc[0] = 1;      // group 0 scale 1
  sc[4] = 1;      // group 0 min 1
  sc[1] = 2;      // group 1 scale 2, min 0
  sc[10] = 0x03;  // group 6 scale 3, min 0
  qs[0] = 0x0F;
  qs[96] = 0x01;
  qh[0] = 0x43;  // fifth bits of elements 0 (bit 0), 32 (bit 1), 192 (bit 6)
  const auto y = dequant(DType::q5_k, b);
  EXPECT_EQ(y[0], 30.0f);    // 1 * (15 + 16) - 1
  EXPECT_EQ(y[1], -1.0f);    // 1 * 0 - 1
  EXPECT_EQ(y[32], 32.0f);   // 2 * (0 + 16)
  EXPECT_EQ(y[192], 51.0f);  // 3 * (1 + 16)
}

TEST(GgmlDequant, Q6_K) {
  std::vector<uint8_t> b(210);
  uint8_t* ql = b.data();
  uint8_t* qh = b.data() + 128;
  int8_t* sc = reinterpret_cast<int8_t*>(b.data() + 192);
  put16(b, 208, kHalfHalf);
  sc[0] = 2;
  sc[1] = 1;
  sc[2] = -3;
  sc[4] = 1;
  sc[6] = 4;
  sc[8] = -1;
  ql[0] = 0x5A;
  ql[32] = 0x3F;
  qh[0] = 0xD8;  // high pairs 0, 2, 1, 3
  ql[64] = 0x01;
  qh[32] = 0x03;
  const auto y = dequant(DType::q6_k, b);
  EXPECT_EQ(y[0], -22.0f);   // 0.5 * 2 * ((10 | 0 << 4) - 32)
  EXPECT_EQ(y[32], -22.5f);  // 0.5 * -3 * ((15 | 2 << 4) - 32)
  EXPECT_EQ(y[64], -5.5f);   // 0.5 * 1 * ((5 | 1 << 4) - 32)
  EXPECT_EQ(y[96], 38.0f);   // 0.5 * 4 * ((3 | 3 << 4) - 32)
  EXPECT_EQ(y[16], -16.0f);  // 0.5 * 1 * (0 - 32)
  EXPECT_EQ(y[128], -8.5f);  // 0.5 * -1 * ((1 | 3 << 4) - 32)
}

TEST(GgmlDequant, Q8_K) {
  std::vector<uint8_t> b(292, 0xEE);  // bsums are ignored
  const uint32_t d = 0x3E000000;      // 0.125f
  std::memcpy(b.data(), &d, 4);
  for (int j = 0; j < 256; ++j) b[4 + j] = static_cast<uint8_t>(j - 128);
  const auto y = dequant(DType::q8_k, b);
  for (int j = 0; j < 256; ++j) EXPECT_EQ(y[j], (j - 128) * 0.125f);
}

TEST(GgmlDequant, TQ1_0) {
  std::vector<uint8_t> b(54);
  b[0] = 188;   // base-3 digits 2 0 1 2 1, as ceil(178 * 256 / 243)
  b[32] = 188;  // the same digits in the 16-byte part
  b[48] = 80;   // digits 0 2 2 1 of a 4-digit byte, as ceil(25 * 3 * 256 / 243)
  put16(b, 52, kHalfTwo);
  const auto y = dequant(DType::tq1_0, b);
  const float expected_first[] = {2, -2, 0, 2, 0};  // (digit - 1) * 2 at 0, 32, 64, 96, 128
  for (int n = 0; n < 5; ++n) {
    EXPECT_EQ(y[n * 32], expected_first[n]);
    EXPECT_EQ(y[160 + n * 16], expected_first[n]);
  }
  const float expected_high[] = {-2, 2, 2, 0};  // at 240, 244, 248, 252
  for (int n = 0; n < 4; ++n) EXPECT_EQ(y[240 + n * 4], expected_high[n]);
  EXPECT_EQ(y[1], -2.0f);  // a zero byte is digits 0 0 0 0 0
}

TEST(GgmlDequant, TQ2_0) {
  std::vector<uint8_t> b(66);
  b[0] = 0x93;  // digits 3, 0, 1, 2 for elements 0, 32, 64, 96
  b[32] = 0x02;
  put16(b, 64, kHalfHalf);
  const auto y = dequant(DType::tq2_0, b);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[32], -0.5f);
  EXPECT_EQ(y[64], 0.0f);
  EXPECT_EQ(y[96], 0.5f);
  EXPECT_EQ(y[128], 0.5f);
  EXPECT_EQ(y[1], -0.5f);
}

TEST(GgmlDequant, IQ4_NL) {
  std::vector<uint8_t> b(18);
  put16(b, 0, kHalfHalf);
  b[2] = 0xF0;
  const auto y = dequant(DType::iq4_nl, b);
  EXPECT_EQ(y[0], -63.5f);  // 0.5 * -127
  EXPECT_EQ(y[16], 56.5f);  // 0.5 * 113
  EXPECT_EQ(y[1], -63.5f);
}

TEST(GgmlDequant, IQ4_XS) {
  std::vector<uint8_t> b(136);
  put16(b, 0, kHalfOne);
  put16(b, 2, 0x0042);  // high scale bits: group 0 -> 2, group 3 -> 1
  b[4] = 0x01;          // group 0 low nibble 1 (scale 33 - 32 = 1)
  b[5] = 0xE0;          // group 3 low nibble 14 (scale 30 - 32 = -2)
  b[8] = 0x8F;
  b[8 + 48] = 0x10;
  const auto y = dequant(DType::iq4_xs, b);
  EXPECT_EQ(y[0], 113.0f);
  EXPECT_EQ(y[16], 1.0f);
  EXPECT_EQ(y[96], 254.0f);   // -2 * -127
  EXPECT_EQ(y[112], 208.0f);  // -2 * -104
}

TEST(GgmlDequant, MXFP4) {
  std::vector<uint8_t> b(34);
  b[0] = 128;  // 2^(128 - 127) times the E2M1 value
  b[1] = 0xF7;
  b[17] = 0;  // 2^-127: the smallest scale
  b[18] = 0x01;
  const auto y = dequant(DType::mxfp4, b);
  EXPECT_EQ(y[0], 12.0f);                    // E2M1 code 7 = 6.0, times 2
  EXPECT_EQ(y[16], -12.0f);                  // code 15 = -6.0
  EXPECT_EQ(y[32], std::ldexp(1.0f, -128));  // code 1 = 0.5, times 2^-127
}

TEST(GgmlDequant, HalfScalesConvertExactlyForEveryBitPattern) {
  std::vector<uint8_t> blocks(65536 * 34);
  for (uint32_t h = 0; h < 65536; ++h) {
    put16(blocks, h * 34, static_cast<uint16_t>(h));
    blocks[h * 34 + 2] = 1;
  }
  const auto y = dequant(DType::q8_0, blocks);
  for (uint32_t h = 0; h < 65536; ++h) {
    const int exp = (h >> 10) & 31, man = h & 1023;
    const float sign = (h & 0x8000) ? -1.0f : 1.0f;
    const float got = y[h * 32];
    if (exp == 31 && man != 0) {
      EXPECT_TRUE(std::isnan(got)) << h;
      continue;
    }
    const float want = exp == 31  ? sign * INFINITY
                       : exp == 0 ? sign * std::ldexp(static_cast<float>(man), -24)
                                  : sign * std::ldexp(static_cast<float>(1024 + man), exp - 25);
    EXPECT_EQ(std::signbit(got), std::signbit(want)) << h;
    EXPECT_EQ(got, want) << h;
  }
}

TEST(GgmlDequant, CoversTheDocumentedTypes) {
  for (DType t : {DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1, DType::q8_0, DType::q2_k,
                  DType::q3_k, DType::q4_k, DType::q5_k, DType::q6_k, DType::q8_k, DType::tq1_0,
                  DType::tq2_0, DType::iq4_nl, DType::iq4_xs, DType::mxfp4})
    EXPECT_TRUE(ggml_can_dequantize(t)) << dtype_name(t);
  for (DType t : {DType::q8_1, DType::iq2_xxs, DType::iq2_xs, DType::iq2_s, DType::iq3_xxs,
                  DType::iq3_s, DType::iq1_s, DType::iq1_m, DType::f32, DType::f16, DType::i8})
    EXPECT_FALSE(ggml_can_dequantize(t)) << dtype_name(t);
}

TEST(GgmlDequant, SizeMismatchAndUnsupportedTypesThrow) {
  std::vector<std::byte> blocks(18);
  std::vector<float> out(31);
  auto code = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::cancelled;  // "did not throw"
  };
  EXPECT_EQ(code([&] { ggml_dequantize_to_f32(DType::q4_0, blocks, out); }),
            ErrorCode::invalid_argument);
  out.resize(64);
  EXPECT_EQ(code([&] { ggml_dequantize_to_f32(DType::q4_0, blocks, out); }),
            ErrorCode::invalid_argument);
  out.resize(32);
  blocks.resize(17);
  EXPECT_EQ(code([&] { ggml_dequantize_to_f32(DType::q4_0, blocks, out); }),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code([&] { ggml_dequantize_to_f32(DType::iq2_xxs, blocks, out); }),
            ErrorCode::unsupported);
  blocks.resize(18);
  EXPECT_NO_THROW(ggml_dequantize_to_f32(DType::q4_0, blocks, out));
  EXPECT_NO_THROW(ggml_dequantize_to_f32(DType::q4_0, {}, std::span<float>()));
}

// Every block-type tensor in the corpus: the stored blocks at data_offset, dequantized here,
// hash to gguf-py's f32 dequantization.
TEST(GgmlDequantGolden, StoredBlocksDequantizeToGgufPyValues) {
  BALLAST_REQUIRE_GOLDEN();
  int checked = 0;
  for (const auto& entry : test::golden_entries("gguf")) {
    if (entry["expect"] != "ok") continue;
    std::ifstream file(*test::golden_dir() / entry["path"].get<std::string>(), std::ios::binary);
    for (const auto& [name, t] : entry["tensors"].items()) {
      auto type = parse_dtype(t["dtype"].get<std::string>());
      ASSERT_TRUE(type);
      if (dtype_info(*type).kind != DTypeKind::quantized) continue;
      SCOPED_TRACE(name);
      std::vector<std::byte> blocks(t["nbytes"].get<size_t>());
      file.seekg(t["data_offset"].get<std::streamoff>());
      file.read(reinterpret_cast<char*>(blocks.data()),
                static_cast<std::streamsize>(blocks.size()));
      ASSERT_TRUE(file.good());
      uint64_t numel = 1;
      for (const auto& d : t["shape"]) numel *= d.get<uint64_t>();
      std::vector<float> f32(numel);
      ggml_dequantize_to_f32(*type, blocks, f32);
      EXPECT_EQ(sha256_hex(std::as_bytes(std::span(f32))), t["sha256_f32"]);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 7);  // q8_0 q4_0 q4_1 q5_0 q5_1 tq1_0 tq2_0 in all_types.gguf
}

}  // namespace
}  // namespace ballast
