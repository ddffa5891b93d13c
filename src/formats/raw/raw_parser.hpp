// Raw bytes: a headerless file (e.g. numpy's ndarray.tofile) holding one little-endian tensor
// named "data", whose dtype, shape and byte offset the caller gives (RawLayout). The file must
// be exactly large enough after the offset; the error says by how many bytes it is not.
// Raw never matches by content: it is used only when asked for.
#pragma once

#include <memory>

#include "ballast/parser.hpp"

namespace ballast {

std::shared_ptr<const FormatParser> make_raw_parser();

}  // namespace ballast
