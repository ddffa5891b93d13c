// Python objects as WeightSource (see py_source.hpp).
#include "py_source.hpp"

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "ballast/error.hpp"
#include "ballast/format.hpp"
#include "ballast/source_uri.hpp"

namespace nb = nanobind;

namespace ballast::python {
namespace {

// A view of the object's buffer that holds the buffer (and so the object) until the last
// tensor viewing it is gone; that may happen on a loader thread, hence the GIL.
MemorySource memory_of(nb::handle object) {
  auto* view = new Py_buffer;
  if (PyObject_GetBuffer(object.ptr(), view, PyBUF_C_CONTIGUOUS) != 0) {
    delete view;
    throw nb::python_error();
  }
  MemorySource m;
  m.bytes = {static_cast<const std::byte*>(view->buf), static_cast<size_t>(view->len)};
  m.owner = std::shared_ptr<const void>(view->buf, [view](const void*) {
    if (Py_IsInitialized()) {
      nb::gil_scoped_acquire gil;
      PyBuffer_Release(view);
    }
    delete view;
  });
  return m;
}

WeightSource location_of(nb::handle object, std::optional<std::string> region,
                         std::optional<std::string> endpoint) {
  if (nb::isinstance<nb::str>(object))
    return parse_source_uri(nb::cast<std::string>(object), std::move(region), std::move(endpoint));
  if (PyObject_CheckBuffer(object.ptr())) return WeightSource::memory(memory_of(object));
  throw nb::type_error(
      "a source is a path or URL string, os.PathLike, bytes-like object or ballast.Source");
}

}  // namespace

WeightSource to_source(nb::handle object) {
  if (!nb::isinstance<nb::tuple>(object)) return location_of(object, std::nullopt, std::nullopt);
  // (location, format, tensor, raw_dtype, raw_shape, raw_offset, s3_region, s3_endpoint,
  //  headers), as ballast.Source._native() builds it.
  auto t = nb::cast<nb::tuple>(object);
  if (t.size() != 9) throw nb::type_error("a source tuple has 9 fields");
  WeightSource source = location_of(t[0], nb::cast<std::optional<std::string>>(t[6]),
                                    nb::cast<std::optional<std::string>>(t[7]));
  if (auto format = nb::cast<std::optional<std::string>>(t[1]))
    source.format = parse_format(*format);
  if (auto tensor = nb::cast<std::optional<std::string>>(t[2])) {
    auto* file = std::get_if<FileSource>(&source.location);
    if (!file) throw Error(ErrorCode::invalid_argument, "tensor= applies only to local files");
    file->tensor_name = *tensor;
  }
  if (auto raw_dtype = nb::cast<std::optional<std::string>>(t[3])) {
    auto dtype = parse_dtype(*raw_dtype);
    if (!dtype) throw Error(ErrorCode::invalid_argument, unknown_dtype_message(*raw_dtype));
    source.raw_layout = RawLayout{*dtype, nb::cast<Shape>(t[4]), nb::cast<uint64_t>(t[5])};
  }
  auto headers = nb::cast<std::map<std::string, std::string>>(t[8]);
  if (!headers.empty()) {
    auto* url = std::get_if<UrlSource>(&source.location);
    if (!url) throw Error(ErrorCode::invalid_argument, "headers= apply only to http(s) URLs");
    url->headers = std::move(headers);
  }
  return source;
}

}  // namespace ballast::python
