// ballast.Tensor (see py_tensor.hpp). DLPack export and the buffer protocol come from
// nanobind's ndarray: the Tensor builds a zero-copy nb::ndarray that owns a TensorRef and lets
// it answer __dlpack__ (legacy or versioned capsule, read-only flag) and getbuffer.
#include "py_tensor.hpp"

#include <optional>
#include <string>

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "ballast/error.hpp"
#include "py_text.hpp"

namespace nb = nanobind;
namespace dl = nb::dlpack;

namespace ballast::python {
namespace {

std::optional<dl::dtype> dlpack_dtype(DType d) {
  auto make = [](dl::dtype_code code, int bits) {
    return dl::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  using C = dl::dtype_code;
  switch (d) {
    case DType::f64: return make(C::Float, 64);
    case DType::f32: return make(C::Float, 32);
    case DType::f16: return make(C::Float, 16);
    case DType::bf16: return make(C::Bfloat, 16);
    case DType::f8_e4m3: return make(C::Float8_E4M3FN, 8);
    case DType::f8_e5m2: return make(C::Float8_E5M2, 8);
    case DType::f8_e4m3fnuz: return make(C::Float8_E4M3FNUZ, 8);
    case DType::f8_e5m2fnuz: return make(C::Float8_E5M2FNUZ, 8);
    case DType::f8_e8m0: return make(C::Float8_E8M0FNU, 8);
    case DType::i64: return make(C::Int, 64);
    case DType::i32: return make(C::Int, 32);
    case DType::i16: return make(C::Int, 16);
    case DType::i8: return make(C::Int, 8);
    case DType::u64: return make(C::UInt, 64);
    case DType::u32: return make(C::UInt, 32);
    case DType::u16: return make(C::UInt, 16);
    case DType::u8: return make(C::UInt, 8);
    case DType::boolean: return make(C::Bool, 8);
    case DType::c64: return make(C::Complex, 64);
    case DType::c128: return make(C::Complex, 128);
    default: return std::nullopt;  // packed and block-quantized types: see Tensor.raw()
  }
}

// Views may write ballast's own buffers and private writable mappings (mapped_writes), not
// a read-only mapping nor the caller's memory (a bytes object, say).
bool writable(const Tensor& t) {
  return t.storage()->kind() != StorageKind::caller_memory && t.storage()->writable();
}

nb::object ndarray_of(const TensorRef& ref, dl::dtype dtype, std::vector<size_t> shape) {
  nb::capsule owner(new TensorRef(ref),
                    [](void* p) noexcept { delete static_cast<TensorRef*>(p); });
  const Device dev = ref->device();
  const int device_type = dev.kind == Device::Kind::cpu ? static_cast<int>(nb::device::cpu::value)
                          : dev.kind == Device::Kind::cuda
                              ? static_cast<int>(nb::device::cuda::value)
                              : static_cast<int>(nb::device::rocm::value);
  void* data = const_cast<std::byte*>(ref->data());
  if (writable(*ref))
    return nb::cast(nb::ndarray<nb::array_api>(data, shape.size(), shape.data(), owner, nullptr,
                                               dtype, device_type, dev.index));
  return nb::cast(nb::ndarray<nb::array_api, nb::ro>(data, shape.size(), shape.data(), owner,
                                                     nullptr, dtype, device_type, dev.index));
}

[[noreturn]] void no_dlpack_type(const Tensor& t, std::string_view what) {
  throw Error(ErrorCode::unsupported,
              std::string(dtype_name(t.dtype())) + " has no " + std::string(what) +
                  " type: add a cast step (ballast.Cast(\"f32\")) or read its bytes with "
                  "Tensor.raw()",
              {.tensor = t.name()});
}

// The tensor as an nb_ndarray of its own dtype and shape.
nb::object typed_array(const TensorRef& ref) {
  auto dtype = dlpack_dtype(ref->dtype());
  if (!dtype) no_dlpack_type(*ref, "DLPack");
  std::vector<size_t> shape(ref->shape().begin(), ref->shape().end());
  return ndarray_of(ref, *dtype, std::move(shape));
}

nb::object byte_array(const TensorRef& ref) {
  return ndarray_of(ref, nb::dtype<uint8_t>(), {static_cast<size_t>(ref->nbytes())});
}

int tensor_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  try {
    const TensorRef& ref = nb::inst_ptr<PyTensor>(self)->ref;
    const DType d = ref->dtype();
    if (!dlpack_dtype(d) || (dtype_info(d).kind == DTypeKind::floating && d != DType::f64 &&
                             d != DType::f32 && d != DType::f16)) {
      PyErr_Format(PyExc_BufferError,
                   "%s has no buffer-protocol format: use torch (Tensor.torch()), add a cast "
                   "step (ballast.Cast(\"f32\")) or read its bytes with Tensor.raw()",
                   std::string(dtype_name(d)).c_str());
      return -1;
    }
    nb::object array = typed_array(ref);
    return PyObject_GetBuffer(array.ptr(), view, flags);
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
    return -1;
  }
}

PyType_Slot tensor_slots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(tensor_getbuffer)},
                              {0, nullptr}};

nb::object frameworks(const char* function, nb::handle self) {
  return nb::module_::import_("ballast._frameworks").attr(function)(self);
}

std::string storage_name(const Tensor& t) {
  static const char* kinds[] = {"mapped_file", "host_buffer", "caller_memory", "device_buffer"};
  return kinds[static_cast<int>(t.storage()->kind())];
}

std::string repr(const Tensor& t) {
  std::string shape;
  for (int64_t d : t.shape()) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  return "ballast.Tensor(name=" + nb::cast<std::string>(nb::repr(decoded(t.name()))) + ", dtype='" +
         std::string(dtype_name(t.dtype())) + "', shape=(" + shape +
         (t.shape().size() == 1 ? ",)" : ")") + ", storage='" + storage_name(t) + "')";
}

}  // namespace

void bind_tensor(nb::module_& m) {
  nb::class_<PyTensor>(m, "Tensor", nb::type_slots(tensor_slots),
                       "A loaded tensor: zero-copy into torch and numpy through DLPack.")
      .def_prop_ro(
          "name", [](const PyTensor& t) { return decoded(t.ref->name()); }, "The tensor's name.")
      .def_prop_ro(
          "dtype", [](const PyTensor& t) { return std::string(dtype_name(t.ref->dtype())); },
          "ballast's dtype name: 'f32', 'bf16', 'f8_e4m3', 'q4_k', ...")
      .def_prop_ro(
          "shape",
          [](const PyTensor& t) {
            nb::list dims;
            for (int64_t d : t.ref->shape()) dims.append(d);
            return nb::tuple(dims);
          },
          "The shape, outermost dimension first.")
      .def_prop_ro(
          "ndim", [](const PyTensor& t) { return t.ref->rank(); }, "The number of dimensions.")
      .def_prop_ro(
          "nbytes", [](const PyTensor& t) { return t.ref->nbytes(); }, "Size in bytes.")
      .def_prop_ro(
          "device", [](const PyTensor& t) { return to_string(t.ref->device()); },
          "Where the bytes are: 'cpu', 'cuda:0', ...")
      .def_prop_ro(
          "storage", [](const PyTensor& t) { return storage_name(*t.ref); },
          "Who holds the bytes: 'mapped_file' (a view of the mapped file or of the bytes object "
          "it was loaded from, no copy), 'host_buffer' (ballast's own buffer), "
          "'caller_memory' or 'device_buffer'.")
      .def_prop_ro(
          "readonly", [](const PyTensor& t) { return !writable(*t.ref); },
          "True when views must not be written: a mapped file, or the caller's memory.")
      .def_prop_ro(
          "data_ptr", [](const PyTensor& t) { return reinterpret_cast<uintptr_t>(t.ref->data()); },
          "The address of element 0.")
      .def_prop_ro(
          "parts",
          [](const PyTensor& t) {
            nb::dict parts;
            for (const auto& [name, part] : t.ref->parts()) parts[decoded(name)] = PyTensor{part};
            return parts;
          },
          "The named parts of a quantized bundle ('qweight', 'scales', ...); empty otherwise.")
      .def(
          "__dlpack__",
          [](nb::handle self, nb::kwargs kwargs) {
            return typed_array(nb::cast<PyTensor&>(self).ref).attr("__dlpack__")(**kwargs);
          },
          "DLPack export (stream=None, max_version=None, dl_device=None, copy=None): a "
          "versioned capsule when max_version >= (1, 0), else a legacy one. No copy is made; "
          "copy=True raises BufferError. A CUDA tensor (kDLCUDA) is complete on its device "
          "when the load returns it (its copies were synchronized), so any consumer `stream` "
          "may read it at once: no wait is queued.")
      .def(
          "__dlpack_device__",
          [](nb::handle self) {
            return byte_array(nb::cast<PyTensor&>(self).ref).attr("__dlpack_device__")();
          },
          "(device_type, device_id) as DLPack numbers: (1, 0) for the CPU, (2, n) for cuda:n.")
      .def(
          "raw", [](const PyTensor& t) { return byte_array(t.ref); },
          "The tensor's bytes as a 1-D uint8 array (DLPack and buffer protocol), for dtypes "
          "that numpy or DLPack cannot name (packed 4/6-bit types, GGUF blocks).")
      .def(
          "numpy", [](nb::handle self) { return frameworks("to_numpy", self); },
          "A numpy.ndarray viewing the tensor (no copy; read-only when `readonly`).")
      .def(
          "torch", [](nb::handle self) { return frameworks("to_torch", self); },
          "A torch.Tensor viewing the tensor (no copy).")
      .def("__repr__", [](const PyTensor& t) { return repr(*t.ref); });
}

}  // namespace ballast::python
