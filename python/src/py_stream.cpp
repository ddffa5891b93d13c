// The streaming iterator (see py_stream.hpp).
#include "py_stream.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "ballast/error.hpp"
#include "py_tensor.hpp"
#include "py_text.hpp"

namespace nb = nanobind;

namespace ballast::python {
namespace {

class TensorStream {
 public:
  TensorStream(WeightLoader& loader, std::vector<TensorSpec> specs, nb::object keep_alive)
      : keep_alive_(std::move(keep_alive)) {
    worker_ = std::thread([this, &loader, specs = std::move(specs)]() mutable {
      std::exception_ptr error;
      try {
        loader.load_tensors_streaming(
            std::move(specs), [this](const std::string& name, TensorRef tensor) {
              std::lock_guard lock(mutex_);
              if (stopped_) throw Error(ErrorCode::cancelled, "the iterator was closed");
              queue_.emplace_back(name, std::move(tensor));
              ready_.notify_one();
            });
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard lock(mutex_);
      done_ = true;
      error_ = error;
      ready_.notify_one();
    });
  }

  TensorStream(const TensorStream&) = delete;
  TensorStream& operator=(const TensorStream&) = delete;

  ~TensorStream() {
    {
      std::lock_guard lock(mutex_);
      stopped_ = true;
    }
    nb::gil_scoped_release release;
    worker_.join();
  }

  // The GIL is let go before the lock is taken, so that no thread holds the lock while it
  // waits for the GIL.
  nb::tuple next() {
    std::optional<std::pair<std::string, TensorRef>> item;
    std::exception_ptr error;
    {
      nb::gil_scoped_release release;
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return !queue_.empty() || done_; });
      if (!queue_.empty()) {
        item = std::move(queue_.front());
        queue_.pop_front();
      } else {
        error = std::exchange(error_, nullptr);
      }
    }
    if (item) return nb::make_tuple(decoded(item->first), PyTensor{std::move(item->second)});
    if (error) std::rethrow_exception(error);
    throw nb::stop_iteration();
  }

 private:
  nb::object keep_alive_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<std::string, TensorRef>> queue_;
  bool done_ = false;
  bool stopped_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

}  // namespace

void bind_stream(nb::module_& m) {
  nb::class_<TensorStream>(m, "TensorStream",
                           "Iterator of (name, Tensor) pairs in completion order.")
      .def("__iter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__next__", &TensorStream::next);
}

nb::object start_stream(WeightLoader& loader, std::vector<TensorSpec> specs,
                        nb::object keep_alive) {
  return nb::cast(new TensorStream(loader, std::move(specs), std::move(keep_alive)),
                  nb::rv_policy::take_ownership);
}

}  // namespace ballast::python
