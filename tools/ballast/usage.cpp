// Usage errors and the checks of numeric options (see usage.hpp).
#include "usage.hpp"

#include <charconv>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "ballast/config.hpp"

namespace ballast::cli {

CLI::Validator whole_number(uint64_t min, uint64_t max, std::string meaning) {
  const std::string range =
      max == UINT64_MAX ? fmt::format("{} or more", min) : fmt::format("from {} to {}", min, max);
  const std::string wanted =
      fmt::format("a whole number {}{}", range, meaning.empty() ? "" : " (" + meaning + ")");
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        uint64_t value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc() && end == text.data() + text.size() && value >= min && value <= max)
          return {};
        return fmt::format("must be {}, not '{}'", wanted, text);
      },
      wanted);
}

CLI::Validator positive_seconds() {
  const std::string wanted =
      fmt::format("a number of seconds above 0, at most {}", kMaxDownloadTimeoutSeconds);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc() && end == text.data() + text.size() && std::isfinite(value) &&
            value > 0 && value <= kMaxDownloadTimeoutSeconds)
          return {};
        return fmt::format("must be {}, not '{}'", wanted, text);
      },
      wanted);
}

DType dtype_option(std::string_view option, const std::string& name) {
  if (auto dtype = parse_dtype(name)) return *dtype;
  throw UsageError(fmt::format("{}: {}", option, unknown_dtype_message(name)));
}

}  // namespace ballast::cli
