// Format detection by content: the first bytes of a source are offered to every registered
// parser's probe, in registration order (custom formats first, weak probes last).
#pragma once

#include <memory>

#include "ballast/byte_source.hpp"
#include "ballast/parser.hpp"

namespace ballast {

// The parser whose probe accepts `source`; throws Error(invalid_format) listing every format
// that was tried when none does.
std::shared_ptr<const FormatParser> detect_format(const ByteSource& source);

}  // namespace ballast
