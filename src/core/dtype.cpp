// The dtype table: names, block sizes and kinds of every DType, and name parsing.
#include "ballast/dtype.hpp"

#include <array>
#include <string>

#include "util/checked.hpp"

namespace ballast {
namespace {

using K = DTypeKind;

// Indexed by DType's underlying value; the order must match the enum exactly.
constexpr std::array kTable = {
    DTypeInfo{"f64", 1, 8, K::floating},
    DTypeInfo{"f32", 1, 4, K::floating},
    DTypeInfo{"f16", 1, 2, K::floating},
    DTypeInfo{"bf16", 1, 2, K::floating},
    DTypeInfo{"f8_e4m3", 1, 1, K::floating},
    DTypeInfo{"f8_e5m2", 1, 1, K::floating},
    DTypeInfo{"f8_e4m3fnuz", 1, 1, K::floating},
    DTypeInfo{"f8_e5m2fnuz", 1, 1, K::floating},
    DTypeInfo{"f8_e8m0", 1, 1, K::floating},
    DTypeInfo{"f6_e2m3", 4, 3, K::floating},
    DTypeInfo{"f6_e3m2", 4, 3, K::floating},
    DTypeInfo{"f4_e2m1", 2, 1, K::floating},
    DTypeInfo{"i64", 1, 8, K::signed_int},
    DTypeInfo{"i32", 1, 4, K::signed_int},
    DTypeInfo{"i16", 1, 2, K::signed_int},
    DTypeInfo{"i8", 1, 1, K::signed_int},
    DTypeInfo{"i4", 2, 1, K::signed_int},
    DTypeInfo{"u64", 1, 8, K::unsigned_int},
    DTypeInfo{"u32", 1, 4, K::unsigned_int},
    DTypeInfo{"u16", 1, 2, K::unsigned_int},
    DTypeInfo{"u8", 1, 1, K::unsigned_int},
    DTypeInfo{"u4", 2, 1, K::unsigned_int},
    DTypeInfo{"bool", 1, 1, K::boolean},
    DTypeInfo{"c64", 1, 8, K::complex},
    DTypeInfo{"c128", 1, 16, K::complex},
    // ggml block types: elements per block, bytes per block (ggml-common.h).
    DTypeInfo{"q4_0", 32, 18, K::quantized},
    DTypeInfo{"q4_1", 32, 20, K::quantized},
    DTypeInfo{"q5_0", 32, 22, K::quantized},
    DTypeInfo{"q5_1", 32, 24, K::quantized},
    DTypeInfo{"q8_0", 32, 34, K::quantized},
    DTypeInfo{"q8_1", 32, 36, K::quantized},
    DTypeInfo{"q2_k", 256, 84, K::quantized},
    DTypeInfo{"q3_k", 256, 110, K::quantized},
    DTypeInfo{"q4_k", 256, 144, K::quantized},
    DTypeInfo{"q5_k", 256, 176, K::quantized},
    DTypeInfo{"q6_k", 256, 210, K::quantized},
    DTypeInfo{"q8_k", 256, 292, K::quantized},
    DTypeInfo{"iq2_xxs", 256, 66, K::quantized},
    DTypeInfo{"iq2_xs", 256, 74, K::quantized},
    DTypeInfo{"iq3_xxs", 256, 98, K::quantized},
    DTypeInfo{"iq1_s", 256, 50, K::quantized},
    DTypeInfo{"iq4_nl", 32, 18, K::quantized},
    DTypeInfo{"iq3_s", 256, 110, K::quantized},
    DTypeInfo{"iq2_s", 256, 82, K::quantized},
    DTypeInfo{"iq4_xs", 256, 136, K::quantized},
    DTypeInfo{"iq1_m", 256, 56, K::quantized},
    DTypeInfo{"tq1_0", 256, 54, K::quantized},
    DTypeInfo{"tq2_0", 256, 66, K::quantized},
    DTypeInfo{"mxfp4", 32, 17, K::quantized},
};
static_assert(kTable.size() == static_cast<size_t>(DType::mxfp4) + 1);

constexpr auto make_all() {
  std::array<DType, kTable.size()> all{};
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<DType>(i);
  return all;
}
constexpr auto kAll = make_all();

struct Alias {
  std::string_view name;
  DType dtype;
};
constexpr std::array kAliases = {
    Alias{"float64", DType::f64},     Alias{"double", DType::f64},  Alias{"float32", DType::f32},
    Alias{"float", DType::f32},       Alias{"float16", DType::f16}, Alias{"half", DType::f16},
    Alias{"bfloat16", DType::bf16},   Alias{"int64", DType::i64},   Alias{"int32", DType::i32},
    Alias{"int16", DType::i16},       Alias{"int8", DType::i8},     Alias{"uint64", DType::u64},
    Alias{"uint32", DType::u32},      Alias{"uint16", DType::u16},  Alias{"uint8", DType::u8},
    Alias{"boolean", DType::boolean}, Alias{"f4", DType::f4_e2m1},
};

}  // namespace

const DTypeInfo& dtype_info(DType dtype) { return kTable[static_cast<size_t>(dtype)]; }

std::span<const DType> all_dtypes() { return kAll; }

std::string unknown_dtype_message(std::string_view name) {
  std::string names;
  for (DType d : kAll) names += (names.empty() ? "" : ", ") + std::string(dtype_info(d).name);
  return "unknown dtype '" + std::string(name) + "'; valid: " + names;
}

std::optional<DType> parse_dtype(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  for (DType d : kAll)
    if (dtype_info(d).name == lower) return d;
  for (const Alias& a : kAliases)
    if (a.name == lower) return a.dtype;
  return std::nullopt;
}

std::optional<uint64_t> dtype_bytes_for(DType dtype, uint64_t elements) {
  const DTypeInfo& info = dtype_info(dtype);
  if (elements % info.block_elements != 0) return std::nullopt;
  return checked_mul(elements / info.block_elements, uint64_t{info.block_bytes});
}

uint32_t dtype_element_size(DType dtype) {
  const DTypeInfo& info = dtype_info(dtype);
  return info.block_elements == 1 ? info.block_bytes : 0;
}

}  // namespace ballast
