// Bit fields of the int32 words GPTQ and AWQ pack their values into, and AWQ's interleaving.
//
// GPTQ packs a run of values as one little-endian bit stream over consecutive words: value i
// sits at stream bits [bits*i, bits*(i+1)). At 2, 4 and 8 bits every value stays inside one
// word (value j of a word at bits [bits*j, bits*(j+1))); at 3 bits, 32 values fill three words
// and values 10 and 21 straddle a word boundary, exactly as AutoGPTQ's 3-bit pack loop lays
// them out. AWQ (4 bits) stores the eight output columns 8c..8c+7 of word c in the order
// kAwqOrder: nibble p holds column 8c + kAwqOrder[p], so column 8c + w sits in nibble
// kAwqNibbleOf[w].
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

// Value `index` of a bit stream whose k-th word is words[k * stride].
inline uint32_t get_streamed(const uint32_t* words, int64_t stride, int64_t index, int bits) {
  const int64_t bit = index * bits;
  const int64_t word = bit / 32;
  const int shift = static_cast<int>(bit % 32);
  uint64_t value = words[word * stride] >> shift;
  if (shift + bits > 32) value |= uint64_t{words[(word + 1) * stride]} << (32 - shift);
  return static_cast<uint32_t>(value) & field_mask(bits);
}

inline void put_streamed(uint32_t* words, int64_t stride, int64_t index, int bits, uint32_t value) {
  value &= field_mask(bits);
  const int64_t bit = index * bits;
  const int64_t word = bit / 32;
  const int shift = static_cast<int>(bit % 32);
  words[word * stride] |= value << shift;
  if (shift + bits > 32) words[(word + 1) * stride] |= value >> (32 - shift);
}

}  // namespace ballast
