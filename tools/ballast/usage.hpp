// Usage errors: a command line that names something wrong (an unknown dtype, a bad --shape,
// an option that does not apply). They exit 2 with a hint to `ballast help CMD`, as CLI11's
// own parse errors do; everything else that fails exits 1. Also the checks of numeric options,
// which say in words what they accept.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "ballast/dtype.hpp"

namespace ballast::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A whole number from `min` to `max`, e.g. "--threads: must be a whole number from 0 to
// 2147483647 (0 = all cores), not 'x'". `meaning` (optional) explains a special value.
CLI::Validator whole_number(uint64_t min, uint64_t max, std::string meaning = {});
// A number of seconds above 0 (and at most a day).
CLI::Validator positive_seconds();

// The dtype an option names, else UsageError listing the valid names.
DType dtype_option(std::string_view option, const std::string& name);

}  // namespace ballast::cli
