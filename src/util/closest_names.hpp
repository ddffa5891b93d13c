// Names like a mistyped one, for "not found" errors: the nearest by edit distance.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ballast {

// Up to `max` of `candidates` within a few edits of `name` (Levenshtein: a third of its length,
// at least 2), nearest first, ties in candidate order. Bounded work for huge checkpoints: a
// candidate whose length differs by more than that is skipped unmeasured, the distance is
// computed in a band, and names longer than 1024 bytes are not compared.
std::vector<std::string> closest_names(std::string_view name,
                                       const std::vector<std::string_view>& candidates,
                                       size_t max = 3);

// "; closest: 'a', 'b'" for the names closest_names finds, or "" when there are none.
std::string closest_names_text(std::string_view name,
                               const std::vector<std::string_view>& candidates);

}  // namespace ballast
