// Typed metadata (ballast::MetadataValue) as native Python values: integers as int, floats as
// float, bools as bool, strings as str (bytes that are not UTF-8 as U+FFFD), arrays of u8 as
// bytes, other arrays as lists, objects as dicts in their order, null as None.
#pragma once

#include <nanobind/nanobind.h>

#include "ballast/metadata_value.hpp"

namespace ballast::python {

nanobind::object native_value(const MetadataValue& value);

}  // namespace ballast::python
