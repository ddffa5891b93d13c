// The Loader's download-progress callback (see py_progress.hpp).
#include "py_progress.hpp"

#include <string>

namespace nb = nanobind;

namespace ballast::python {

ProgressCallback::~ProgressCallback() {
  // The last owner may be a loader thread without the GIL, or the interpreter may be gone.
  if (callable_ == nullptr || !Py_IsInitialized()) return;
  nb::gil_scoped_acquire gil;
  Py_CLEAR(callable_);
}

std::function<void(const DownloadProgress&)> ProgressCallback::hold(
    const std::shared_ptr<ProgressCallback>& self, nb::handle callable) {
  if (callable.is_none()) return {};
  if (!PyCallable_Check(callable.ptr()))
    throw nb::type_error(
        ("on_download_progress: " + nb::cast<std::string>(nb::repr(callable)) + " is not callable")
            .c_str());
  Py_XSETREF(self->callable_, nb::borrow(callable).release().ptr());
  return [self](const DownloadProgress& p) {
    nb::gil_scoped_acquire gil;
    if (self->callable_ == nullptr) return;         // cleared by the garbage collector
    nb::object call = nb::borrow(self->callable_);  // alive for the call even if cleared
    try {
      call(p.source, p.bytes_done, p.bytes_total);
    } catch (nb::python_error& e) {
      e.discard_as_unraisable("ballast download progress callback");
    }
  };
}

int ProgressCallback::traverse(visitproc visit, void* arg) const {
  Py_VISIT(callable_);
  return 0;
}

void ProgressCallback::clear() { Py_CLEAR(callable_); }

}  // namespace ballast::python
