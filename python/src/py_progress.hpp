// The Python download-progress callback of a ballast.Loader, held where Python's garbage
// collector can see it. A Loader kept at module level whose callback refers back to the
// module (a lambda, a bound method) forms a reference cycle through the native loader; the
// Loader reports the callable to the collector (tp_traverse) and drops it when the collector
// breaks the cycle (tp_clear), so the cycle is freed and nothing leaks at exit.
#pragma once

#include <Python.h>

#include <functional>
#include <memory>

#include <nanobind/nanobind.h>

#include "ballast/config.hpp"

namespace ballast::python {

class ProgressCallback {
 public:
  ProgressCallback() = default;
  ProgressCallback(const ProgressCallback&) = delete;
  ProgressCallback& operator=(const ProgressCallback&) = delete;
  ~ProgressCallback();

  // Holds `callable` (None: no callback) and returns the function for
  // WeightLoaderConfig::on_download_progress: it runs on download threads, takes the GIL, does
  // nothing once the callable is cleared, and reports a Python error as unraisable. Raises
  // TypeError when `callable` is neither None nor callable. Needs the GIL.
  static std::function<void(const DownloadProgress&)> hold(
      const std::shared_ptr<ProgressCallback>& self, nanobind::handle callable);

  // For the owning type's tp_traverse and tp_clear; both run with the GIL held.
  int traverse(visitproc visit, void* arg) const;
  void clear();

 private:
  PyObject* callable_ = nullptr;  // a strong reference, read and changed only under the GIL
};

}  // namespace ballast::python
