// TensorHandoff (see tensor_handoff.hpp).
#include "loader/tensor_handoff.hpp"

#include <string>

#include "ballast/error.hpp"

namespace ballast {

void TensorHandoff::put(TensorRef tensor) {
  {
    std::lock_guard lock(mutex_);
    if (failure_)
      throw Error(ErrorCode::cancelled, "the streaming load has failed",
                  {.tensor = tensor->name()});
    queue_.push_back(std::move(tensor));
  }
  changed_.notify_all();
}

void TensorHandoff::fail(std::exception_ptr error) {
  std::deque<TensorRef> dropped;  // released outside the lock
  {
    std::lock_guard lock(mutex_);
    if (!failure_) failure_ = std::move(error);
    dropped.swap(queue_);
  }
  changed_.notify_all();
}

void TensorHandoff::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

void TensorHandoff::deliver_all() {
  for (;;) {
    TensorRef tensor;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return failure_ || closed_ || !queue_.empty(); });
      if (failure_) break;
      if (queue_.empty()) return;  // closed, and every tensor handed over
      tensor = std::move(queue_.front());
      queue_.pop_front();
    }
    const std::string name = tensor->name();
    try {
      on_tensor_(name, std::move(tensor));
    } catch (...) {
      fail(std::current_exception());
    }
  }
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return closed_; });
  std::rethrow_exception(failure_);
}

}  // namespace ballast
