// ballast._core.Loader: a WeightLoader for Python. Every call releases the GIL while it loads,
// and the loader may be used from many Python threads at once (the C++ loader is thread-safe).
// Specs arrive as the tuples that ballast/_spec.py builds.
#pragma once

#include <nanobind/nanobind.h>

namespace ballast::python {

void bind_loader(nanobind::module_& m);

}  // namespace ballast::python
