// ballast.Tensor: a loaded tensor as Python sees it. It shares the C++ TensorRef, so the
// storage (a file mapping, an owned buffer, the caller's memory) lives as long as the Tensor or
// any DLPack, buffer-protocol, numpy or torch view made from it.
#pragma once

#include <nanobind/nanobind.h>

#include "ballast/tensor.hpp"

namespace ballast::python {

struct PyTensor {
  TensorRef ref;
};

void bind_tensor(nanobind::module_& m);

}  // namespace ballast::python
