// Bit fields of the int32 words GPTQ and AWQ pack their values into, and AWQ's interleaving.
//
// GPTQ puts value j of a word at bits [bits*j, bits*(j+1)). AWQ (4 bits) stores the eight
// output columns 8c..8c+7 of word c in the order kAwqOrder: nibble p holds column
// 8c + kAwqOrder[p], so column 8c + w sits in nibble kAwqNibbleOf[w].
#pragma once

#include <array>
#include <cstdint>

namespace ballast {

inline constexpr std::array<int, 8> kAwqOrder = {0, 2, 4, 6, 1, 3, 5, 7};
inline constexpr std::array<int, 8> kAwqNibbleOf = {0, 4, 1, 5, 2, 6, 3, 7};

inline uint32_t field_mask(int bits) { return (uint32_t{1} << bits) - 1; }

inline uint32_t get_field(uint32_t word, int index, int bits) {
  return (word >> (bits * index)) & field_mask(bits);
}

inline void put_field(uint32_t& word, int index, int bits, uint32_t value) {
  word |= (value & field_mask(bits)) << (bits * index);
}

}  // namespace ballast
