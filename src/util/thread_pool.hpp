// A fixed-size pool of worker threads running queued tasks in FIFO order. Destruction waits
// for queued tasks to finish. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace ballast {

class ThreadPool {
 public:
  // Starts one worker running `work` (a test may make it throw, as std::thread does when the
  // system refuses a thread).
  using ThreadStart = std::function<std::thread(std::function<void()> work)>;

  // Starts `threads` workers (at least one). When the system refuses one (std::system_error,
  // std::bad_alloc), the workers already started are stopped and joined and the constructor
  // throws Error(limit_exceeded) saying how many were asked for.
  explicit ThreadPool(unsigned threads, const ThreadStart& start = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()); }
  void post(std::function<void()> task);
  // Runs `task` before every queued one (helpers for work that is already running).
  void post_front(std::function<void()> task);

  template <typename F>
  auto submit(F&& f) -> std::future<decltype(f())> {
    using R = decltype(f());
    auto task = std::make_shared<std::packaged_task<R()>>(std::forward<F>(f));
    auto future = task->get_future();
    post([task] { (*task)(); });
    return future;
  }

 private:
  void work();
  void stop_and_join();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace ballast
