// The ggml type table: every id known today maps to the DType of the same lowercase name with
// ggml's block geometry, which must equal ballast's dtype table; removed and future ids are
// unknown.
#include <gtest/gtest.h>

#include <cctype>
#include <set>

#include "formats/gguf/ggml_types.hpp"

namespace ballast {
namespace {

TEST(GgmlTypes, EveryKnownIdMatchesTheDTypeTable) {
  const std::set<uint32_t> known = {0,  1,  2,  3,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17,
                                    18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 34, 35, 39};
  EXPECT_EQ(ggml_types().size(), known.size());
  for (const GgmlType& t : ggml_types()) {
    SCOPED_TRACE(t.name);
    EXPECT_TRUE(known.contains(t.id));
    std::string lower(t.name);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(dtype_name(t.dtype), lower);
    EXPECT_EQ(dtype_info(t.dtype).block_elements, t.block_elements);
    EXPECT_EQ(dtype_info(t.dtype).block_bytes, t.block_bytes);
    EXPECT_EQ(ggml_type_id(t.dtype), t.id);
    EXPECT_EQ(find_ggml_type(t.id)->dtype, t.dtype);
  }
}

TEST(GgmlTypes, RemovedAndFutureIdsAreUnknown) {
  for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u, 41u, 1000u, 0xFFFFFFFFu})
    EXPECT_FALSE(find_ggml_type(id).has_value()) << id;
}

TEST(GgmlTypes, DTypesGgufCannotStoreHaveNoId) {
  for (DType d : {DType::u8, DType::u16, DType::u32, DType::u64, DType::boolean, DType::c64,
                  DType::f8_e4m3, DType::i4})
    EXPECT_FALSE(ggml_type_id(d).has_value()) << dtype_name(d);
}

}  // namespace
}  // namespace ballast
