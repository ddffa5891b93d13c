// ballast._core.Loader (see py_loader.hpp).
#include "py_loader.hpp"

#include <memory>
#include <string>
#include <vector>

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "ballast/distributed.hpp"
#include "ballast/error.hpp"
#include "ballast/loader.hpp"
#include "py_communicator.hpp"
#include "py_config.hpp"
#include "py_metadata.hpp"
#include "py_progress.hpp"
#include "py_source.hpp"
#include "py_stream.hpp"
#include "py_tensor.hpp"
#include "py_text.hpp"

namespace nb = nanobind;

namespace ballast::python {
namespace {

// (name, shape or None, dtype name or None, device, source, transformations in the CLI's
// syntax), as ballast/_spec.py builds it.
TensorSpec to_spec(nb::handle object) {
  auto t = nb::cast<nb::tuple>(object);
  if (t.size() != 6) throw nb::type_error("a spec tuple has 6 fields");
  TensorSpec spec;
  spec.name = nb::cast<std::string>(t[0]);
  if (!t[1].is_none()) spec.shape = nb::cast<Shape>(t[1]);
  if (!t[2].is_none()) {
    auto name = nb::cast<std::string>(t[2]);
    spec.dtype = parse_dtype(name);
    if (!spec.dtype) throw Error(ErrorCode::invalid_argument, unknown_dtype_message(name));
  }
  auto device_name = nb::cast<std::string>(t[3]);
  auto device = parse_device(device_name);
  if (!device) throw Error(ErrorCode::invalid_argument, "unknown device '" + device_name + "'");
  spec.device = *device;
  spec.source = to_source(t[4]);
  spec.transformations = parse_transformations(nb::cast<std::string>(t[5]));
  return spec;
}

std::vector<TensorSpec> to_specs(const nb::list& specs) {
  std::vector<TensorSpec> out;
  out.reserve(specs.size());
  for (nb::handle s : specs) out.push_back(to_spec(s));
  return out;
}

// A Python exception as the ballast::Error it stands for: a ballast.Error keeps its code.
Error as_error(const nb::python_error& e) {
  const std::string message = nb::cast<std::string>(nb::str(e.value()));
  if (nb::hasattr(e.value(), "code")) {
    const auto name = nb::cast<std::string>(nb::str(e.value().attr("code")));
    for (int c = 0; c <= static_cast<int>(ErrorCode::invalid_argument); ++c) {
      if (error_code_name(static_cast<ErrorCode>(c)) != name) continue;
      // Its text starts with the code, which the Error's own text names again.
      const std::string prefix = name + ": ";
      return Error(static_cast<ErrorCode>(c),
                   message.starts_with(prefix) ? message.substr(prefix.size()) : message);
    }
  }
  return Error(ErrorCode::invalid_argument, message);
}

// Specs from `make_specs` (a callable returning spec tuples), agreed on by every rank: one
// rank's failure to list them (a missing file) is raised on every rank.
std::vector<TensorSpec> agreed_specs(Communicator& comm, nb::handle make_specs) {
  std::vector<TensorSpec> specs;
  std::exception_ptr failure;
  try {
    specs = to_specs(nb::cast<nb::list>(make_specs()));
  } catch (nb::python_error& e) {
    failure = std::make_exception_ptr(as_error(e));
  } catch (...) {
    failure = std::current_exception();
  }
  nb::gil_scoped_release release;
  agree_on_failure(comm, failure, "listing the tensors");
  return specs;
}

nb::dict limits_dict(const Limits& limits) {
  nb::dict d;
  for_each_limit([&](const char* name, auto member) { d[name] = limits.*member; });
  return d;
}

nb::dict metadata_dict(const WeightMetadata& m) {
  nb::dict tensors;
  for (const auto& [name, info] : m.tensors) {
    nb::list shape;
    for (int64_t d : info.shape) shape.append(d);
    tensors[decoded(name)] =
        nb::make_tuple(std::string(dtype_name(info.dtype)), nb::tuple(shape), info.nbytes);
  }
  nb::list dtypes;
  for (DType d : m.dtypes) dtypes.append(std::string(dtype_name(d)));
  nb::dict d;
  d["format"] = to_string(m.format);
  d["tensors"] = tensors;
  d["total_size_bytes"] = m.total_size_bytes;
  d["dtypes"] = dtypes;
  d["extra"] = m.extra;
  d["values"] = native_value(m.values);
  nb::list files, ignored;
  for (const auto& file : m.files) files.append(decoded(file));
  for (const auto& file : m.ignored_files)
    ignored.append(nb::make_tuple(decoded(file.name), file.reason));
  d["files"] = files;
  d["ignored_files"] = ignored;
  return d;
}

nb::dict capabilities_dict(const WeightLoaderCapabilities& c) {
  nb::list formats, devices;
  for (const auto& f : c.formats) formats.append(to_string(f));
  for (Device::Kind k : c.devices) devices.append(to_string(Device{k, 0}));
  nb::dict d;
  d["formats"] = formats;
  d["sources"] = c.sources;
  d["transformations"] = c.transformations;
  d["devices"] = devices;
  d["max_tensor_size"] = c.max_tensor_size;
  d["supports_streaming"] = c.supports_streaming;
  d["supports_concurrent_loading"] = c.supports_concurrent_loading;
  d["limits"] = limits_dict(c.limits);
  return d;
}

class PyLoader {
 public:
  explicit PyLoader(const nb::dict& options) {
    nb::dict config_options;
    for (auto [key, value] : options)
      if (!key.equal(nb::str("on_download_progress"))) config_options[key] = value;
    WeightLoaderConfig config = to_config(config_options);
    if (options.contains("on_download_progress"))
      config.on_download_progress =
          ProgressCallback::hold(progress_, options["on_download_progress"]);
    loader_ = make_weight_loader(std::move(config));
  }
  PyLoader(const PyLoader&) = delete;
  PyLoader& operator=(const PyLoader&) = delete;
  // The loader's threads may be waiting for the GIL (a progress callback): let it go.
  ~PyLoader() {
    nb::gil_scoped_release release;
    loader_.reset();
  }

  PyTensor load_tensor(nb::handle spec) {
    TensorSpec s = to_spec(spec);
    nb::gil_scoped_release release;
    return PyTensor{loader_->load_tensor(std::move(s))};
  }

  std::vector<PyTensor> load_tensors(const nb::list& specs) {
    std::vector<TensorSpec> s = to_specs(specs);
    std::vector<TensorRef> loaded;
    {
      nb::gil_scoped_release release;
      loaded = loader_->load_tensors(std::move(s));
    }
    std::vector<PyTensor> out;
    out.reserve(loaded.size());
    for (auto& t : loaded) out.push_back(PyTensor{std::move(t)});
    return out;
  }

  nb::dict load_checkpoint(nb::handle source, std::vector<std::string> patterns,
                           const std::string& transformations) {
    WeightSource s = to_source(source);
    auto steps = parse_transformations(transformations);
    std::map<std::string, TensorRef> loaded;
    {
      nb::gil_scoped_release release;
      loaded = loader_->load_checkpoint(std::move(s), std::move(patterns), std::move(steps));
    }
    nb::dict out;
    for (auto& [name, t] : loaded) out[decoded(name)] = PyTensor{std::move(t)};
    return out;
  }

  nb::dict get_metadata(nb::handle source) {
    WeightSource s = to_source(source);
    WeightMetadata m;
    {
      nb::gil_scoped_release release;
      m = loader_->get_metadata(std::move(s));
    }
    return metadata_dict(m);
  }

  bool is_available(nb::handle source) {
    WeightSource s = to_source(source);
    nb::gil_scoped_release release;
    return loader_->is_available(std::move(s));
  }

  void preload(nb::handle source) {
    WeightSource s = to_source(source);
    nb::gil_scoped_release release;
    loader_->preload(std::move(s));
  }

  // (tensors, storage bytes, received bytes, rounds, verified bytes); the GIL is released while
  // it loads and taken back only for the communicator's collectives, on this thread.
  nb::tuple load_cooperative(nb::handle make_specs, nb::handle communicator, uint64_t round_bytes,
                             bool verify_copies) {
    auto comm = make_python_communicator(communicator);
    std::vector<TensorSpec> specs = agreed_specs(*comm, make_specs);
    CooperativeResult result;
    {
      nb::gil_scoped_release release;
      result = ballast::load_cooperative(
          *loader_, *comm, specs, {.round_bytes = round_bytes, .verify_copies = verify_copies});
    }
    nb::list tensors;
    for (auto& t : result.tensors) tensors.append(PyTensor{std::move(t)});
    return nb::make_tuple(tensors, result.storage_bytes, result.received_bytes, result.rounds,
                          result.verified_bytes);
  }

  nb::dict capabilities() const { return capabilities_dict(loader_->capabilities()); }

  WeightLoader& loader() { return *loader_; }
  ProgressCallback& progress() { return *progress_; }

 private:
  std::shared_ptr<ProgressCallback> progress_ = std::make_shared<ProgressCallback>();
  std::unique_ptr<WeightLoader> loader_;
};

// The garbage collector's view of a Loader: its progress callback (py_progress.hpp).
int loader_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  return nb::inst_ptr<PyLoader>(self)->progress().traverse(visit, arg);
}

int loader_clear(PyObject* self) {
  if (nb::inst_ready(self)) nb::inst_ptr<PyLoader>(self)->progress().clear();
  return 0;
}

PyType_Slot loader_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(loader_traverse)},
                              {Py_tp_clear, reinterpret_cast<void*>(loader_clear)},
                              {0, nullptr}};

}  // namespace

void bind_loader(nb::module_& m) {
  nb::class_<PyLoader>(m, "Loader", nb::type_slots(loader_slots),
                       "The native loader; use ballast.Loader.")
      .def(nb::init<const nb::dict&>(), nb::arg("options"))
      .def("load_tensor", &PyLoader::load_tensor, nb::arg("spec"))
      .def("load_tensors", &PyLoader::load_tensors, nb::arg("specs"))
      .def("load_checkpoint", &PyLoader::load_checkpoint, nb::arg("source"), nb::arg("patterns"),
           nb::arg("transformations"))
      .def(
          "stream",
          [](nb::handle self, const nb::list& specs) {
            return start_stream(nb::cast<PyLoader&>(self).loader(), to_specs(specs),
                                nb::borrow(self));
          },
          nb::arg("specs"))
      .def("load_cooperative", &PyLoader::load_cooperative, nb::arg("make_specs"),
           nb::arg("communicator"), nb::arg("round_bytes"), nb::arg("verify_copies"))
      .def("get_metadata", &PyLoader::get_metadata, nb::arg("source"))
      .def("is_available", &PyLoader::is_available, nb::arg("source"))
      .def("preload", &PyLoader::preload, nb::arg("source"))
      .def("capabilities", &PyLoader::capabilities);
}

}  // namespace ballast::python
