// ballast::Communicator over a Python object (see py_communicator.hpp). A Python exception in a
// collective becomes Error(network), as a failed transport is in the C++ communicators.
#include "py_communicator.hpp"

#include <Python.h>

#include <string>
#include <thread>

#include <nanobind/stl/string.h>

#include "ballast/error.hpp"

namespace nb = nanobind;

namespace ballast::python {
namespace {

nb::list integers(std::span<const uint64_t> values) {
  nb::list out;
  for (uint64_t v : values) out.append(v);
  return out;
}

// A writable memoryview over `bytes`, valid while the call that receives it runs.
nb::object writable_view(std::span<std::byte> bytes) {
  return nb::steal(PyMemoryView_FromMemory(reinterpret_cast<char*>(bytes.data()),
                                           static_cast<Py_ssize_t>(bytes.size()), PyBUF_WRITE));
}

// A read-only memoryview over `bytes`, valid while the call that receives it runs.
nb::object read_only_view(std::span<const std::byte> bytes) {
  // PyMemoryView_FromMemory takes char*; PyBUF_READ keeps Python from writing through it.
  return nb::steal(
      PyMemoryView_FromMemory(const_cast<char*>(reinterpret_cast<const char*>(bytes.data())),
                              static_cast<Py_ssize_t>(bytes.size()), PyBUF_READ));
}

class PythonCommunicator final : public Communicator {
  // Runs `body` holding the GIL, on the thread that made this communicator only.
  template <class F>
  auto call(const char* method, F&& body) const {
    if (std::this_thread::get_id() != owner_)
      throw Error(ErrorCode::invalid_argument,
                  std::string("the Python communicator's ") + method +
                      " was called from another thread than the one that made it");
    nb::gil_scoped_acquire gil;
    try {
      return body();
    } catch (nb::python_error& e) {
      throw Error(ErrorCode::network, std::string("the communicator's ") + method + " failed: " +
                                          nb::cast<std::string>(e.type().attr("__name__")) + ": " +
                                          nb::cast<std::string>(nb::str(e.value())));
    } catch (nb::cast_error&) {
      throw Error(ErrorCode::network,
                  std::string("the communicator's ") + method + " returned a wrong type");
    }
  }

 public:
  explicit PythonCommunicator(nb::handle object)
      : object_(nb::borrow(object)), owner_(std::this_thread::get_id()) {}
  PythonCommunicator(const PythonCommunicator&) = delete;
  PythonCommunicator& operator=(const PythonCommunicator&) = delete;
  ~PythonCommunicator() override {
    nb::gil_scoped_acquire gil;
    object_.reset();
  }

  int rank() const override {
    return call("rank", [&] { return nb::cast<int>(object_.attr("rank")()); });
  }
  int size() const override {
    return call("size", [&] { return nb::cast<int>(object_.attr("size")()); });
  }
  void allgatherv_in_place(std::span<std::byte> buffer, std::span<const uint64_t> counts,
                           std::span<const uint64_t> displacements) override {
    call("allgatherv_in_place", [&] {
      object_.attr("allgatherv_in_place")(writable_view(buffer), integers(counts),
                                          integers(displacements));
      return 0;
    });
  }
  bool has_alltoallv() const override {
    return call("alltoallv", [&] { return nb::hasattr(object_, "alltoallv"); });
  }
  void alltoallv(std::span<const std::byte> send, std::span<const uint64_t> send_counts,
                 std::span<const uint64_t> send_displacements, std::span<std::byte> recv,
                 std::span<const uint64_t> recv_counts,
                 std::span<const uint64_t> recv_displacements) override {
    call("alltoallv", [&] {
      object_.attr("alltoallv")(read_only_view(send), integers(send_counts),
                                integers(send_displacements), writable_view(recv),
                                integers(recv_counts), integers(recv_displacements));
      return 0;
    });
  }
  void broadcast(std::span<std::byte> bytes, int root) override {
    call("broadcast", [&] {
      object_.attr("broadcast")(writable_view(bytes), root);
      return 0;
    });
  }
  int64_t allreduce_max(int64_t value) override {
    return call("allreduce_max",
                [&] { return nb::cast<int64_t>(object_.attr("allreduce_max")(value)); });
  }

 private:
  nb::object object_;
  std::thread::id owner_;
};

}  // namespace

std::unique_ptr<Communicator> make_python_communicator(nb::handle object) {
  return std::make_unique<PythonCommunicator>(object);
}

}  // namespace ballast::python
