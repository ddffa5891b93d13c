// Python objects as WeightSource: a string (path or URL, as the CLI reads SOURCE), a
// bytes-like object (a memory source viewing its buffer, no copy), or the tuple that
// ballast.Source hands over.
#pragma once

#include <nanobind/nanobind.h>

#include "ballast/source.hpp"

namespace ballast::python {

// Needs the GIL. Raises TypeError for any other object.
WeightSource to_source(nanobind::handle object);

}  // namespace ballast::python
