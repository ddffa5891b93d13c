// TensorHandoff: how a streaming load's tensors reach the caller's callback. The loader's
// threads put each completed tensor here without waiting; one delivery thread, never a loader
// thread, takes them out and calls the callback one call at a time. So a callback may make
// blocking loads of its own (no loader thread waits for it), and after the load's first failure
// (a load's or the callback's) no further call starts, whatever the thread count.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>

#include "ballast/loader.hpp"

namespace ballast {

class TensorHandoff {
 public:
  explicit TensorHandoff(TensorCallback on_tensor) : on_tensor_(std::move(on_tensor)) {}

  // From a loader thread: queues `tensor` for the callback. Throws Error(cancelled) once the
  // load has failed, so that its remaining work stops.
  void put(TensorRef tensor);
  // Records a failure; the first one recorded is the load's. No call starts after it.
  void fail(std::exception_ptr error);
  // The load is over: nothing more will be put.
  void close();

  // On the delivery thread: calls the callback for each tensor until the load is over and
  // every tensor is handed over, or until the first failure; returns once the load is over
  // either way, rethrowing the first failure.
  void deliver_all();

 private:
  TensorCallback on_tensor_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<TensorRef> queue_;
  std::exception_ptr failure_;
  bool closed_ = false;
};

}  // namespace ballast
