// Raises ballast::Error as the Python exception of its code: ballast._errors._from_native builds
// the exception object (the class hierarchy lives in Python, with the builtin bases that fit).
#include "py_errors.hpp"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "ballast/error.hpp"
#include "py_text.hpp"

namespace nb = nanobind;

namespace ballast::python {
namespace {

nb::object optional_text(const std::string& text) {
  if (text.empty()) return nb::none();
  return decoded(text);
}

void raise(const Error& e) {
  const ErrorContext& c = e.context();
  nb::object make = nb::module_::import_("ballast._errors").attr("_from_native");
  nb::object offset = c.offset ? nb::cast(*c.offset) : nb::none();
  nb::object exc = make(std::string(error_code_name(e.code())), decoded(e.what()),
                        decoded(e.message()), optional_text(c.source), optional_text(c.tensor),
                        offset, optional_text(c.expected), optional_text(c.actual));
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
}

}  // namespace

void register_error_translator() {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      try {
        raise(e);
      } catch (nb::python_error& failed) {
        failed.restore();
      }
    }
  });
}

}  // namespace ballast::python
