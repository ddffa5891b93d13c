// How the CLI words counts and orders names for a person reading a table: "1 tensor" and
// "2 tensors", and names in natural order ("layers.2" before "layers.10").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ballast::cli {

// "1 tensor", "0 tensors", "12 tensors": `noun` is the singular, its plural adds an "s".
std::string counted(uint64_t n, std::string_view noun);

// Natural order: runs of digits compare by their value (then by length, so "01" follows
// "1"), everything else byte by byte.
bool natural_less(std::string_view a, std::string_view b);

// `names` sorted in natural order.
std::vector<std::string> naturally_sorted(std::vector<std::string> names);

}  // namespace ballast::cli
