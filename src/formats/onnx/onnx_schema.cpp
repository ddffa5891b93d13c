// StringStringEntryProto reading (see onnx_schema.hpp).
#include "formats/onnx/onnx_schema.hpp"

#include <fmt/format.h>

namespace ballast {

StringEntry read_string_entry(WireInput& in, const WireField& field, uint64_t max_length,
                              std::string_view what) {
  expect_wire_type(in, field, WireType::len, what);
  StringEntry out;
  MessageReader reader(in, field.payload());
  WireField f;
  while (reader.next(f)) {
    if (f.number == onnx_field::entry::key)
      out.key = read_wire_string(in, f, max_length, fmt::format("{} key", what));
    else if (f.number == onnx_field::entry::value)
      out.value = read_wire_string(in, f, max_length, fmt::format("{} value", what));
  }
  return out;
}

}  // namespace ballast
