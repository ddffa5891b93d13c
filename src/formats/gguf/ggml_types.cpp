// The ggml type table (ids and block geometry from ggml.h and ggml-common.h).
#include "formats/gguf/ggml_types.hpp"

#include <array>

namespace ballast {
namespace {

constexpr std::array kTypes = {
    GgmlType{0, "F32", DType::f32, 1, 4},
    GgmlType{1, "F16", DType::f16, 1, 2},
    GgmlType{2, "Q4_0", DType::q4_0, 32, 18},
    GgmlType{3, "Q4_1", DType::q4_1, 32, 20},
    GgmlType{6, "Q5_0", DType::q5_0, 32, 22},
    GgmlType{7, "Q5_1", DType::q5_1, 32, 24},
    GgmlType{8, "Q8_0", DType::q8_0, 32, 34},
    GgmlType{9, "Q8_1", DType::q8_1, 32, 36},
    GgmlType{10, "Q2_K", DType::q2_k, 256, 84},
    GgmlType{11, "Q3_K", DType::q3_k, 256, 110},
    GgmlType{12, "Q4_K", DType::q4_k, 256, 144},
    GgmlType{13, "Q5_K", DType::q5_k, 256, 176},
    GgmlType{14, "Q6_K", DType::q6_k, 256, 210},
    GgmlType{15, "Q8_K", DType::q8_k, 256, 292},
    GgmlType{16, "IQ2_XXS", DType::iq2_xxs, 256, 66},
    GgmlType{17, "IQ2_XS", DType::iq2_xs, 256, 74},
    GgmlType{18, "IQ3_XXS", DType::iq3_xxs, 256, 98},
    GgmlType{19, "IQ1_S", DType::iq1_s, 256, 50},
    GgmlType{20, "IQ4_NL", DType::iq4_nl, 32, 18},
    GgmlType{21, "IQ3_S", DType::iq3_s, 256, 110},
    GgmlType{22, "IQ2_S", DType::iq2_s, 256, 82},
    GgmlType{23, "IQ4_XS", DType::iq4_xs, 256, 136},
    GgmlType{24, "I8", DType::i8, 1, 1},
    GgmlType{25, "I16", DType::i16, 1, 2},
    GgmlType{26, "I32", DType::i32, 1, 4},
    GgmlType{27, "I64", DType::i64, 1, 8},
    GgmlType{28, "F64", DType::f64, 1, 8},
    GgmlType{29, "IQ1_M", DType::iq1_m, 256, 56},
    GgmlType{30, "BF16", DType::bf16, 1, 2},
    GgmlType{34, "TQ1_0", DType::tq1_0, 256, 54},
    GgmlType{35, "TQ2_0", DType::tq2_0, 256, 66},
    GgmlType{39, "MXFP4", DType::mxfp4, 32, 17},
};

}  // namespace

std::optional<GgmlType> find_ggml_type(uint32_t id) {
  for (const GgmlType& t : kTypes)
    if (t.id == id) return t;
  return std::nullopt;
}

std::optional<uint32_t> ggml_type_id(DType dtype) {
  for (const GgmlType& t : kTypes)
    if (t.dtype == dtype) return t.id;
  return std::nullopt;
}

std::span<const GgmlType> ggml_types() { return kTypes; }

}  // namespace ballast
