// ballast._core: the native half of the `ballast` Python package (python/ballast/ is the rest).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "ballast/dtype.hpp"
#include "py_errors.hpp"
#include "py_loader.hpp"
#include "py_stream.hpp"
#include "py_tensor.hpp"

namespace nb = nanobind;

NB_MODULE(_core, m) {
  m.doc() = "ballast's native module; import ballast instead.";
  ballast::python::register_error_translator();
  ballast::python::bind_tensor(m);
  ballast::python::bind_stream(m);
  ballast::python::bind_loader(m);
  m.def(
      "dtype_names",
      [] {
        nb::list names;
        for (ballast::DType d : ballast::all_dtypes())
          names.append(std::string(ballast::dtype_name(d)));
        return names;
      },
      "Every dtype name ballast knows, in its order.");
  m.def(
      "canonical_dtype",
      [](const std::string& name) -> nb::object {
        auto d = ballast::parse_dtype(name);
        return d ? nb::cast(std::string(ballast::dtype_name(*d))) : nb::none();
      },
      nb::arg("name"), "The canonical name of a dtype name or alias, or None.");
}
