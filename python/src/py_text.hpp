// Text from files (tensor names, error messages quoting them) as Python str: bytes that are
// not UTF-8 become U+FFFD rather than an exception, since a hostile file may hold any bytes.
#pragma once

#include <string_view>

#include <nanobind/nanobind.h>

namespace ballast::python {

inline nanobind::str decoded(std::string_view text) {
  PyObject* s = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
  if (!s) throw nanobind::python_error();
  return nanobind::steal<nanobind::str>(s);
}

}  // namespace ballast::python
