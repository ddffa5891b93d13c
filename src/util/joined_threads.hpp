// JoinedThreads: threads that each run one task, all joined before the set is destroyed, so a
// task never outlives the object that owns the set. Thread-safe; a task may start another.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ballast {

class JoinedThreads {
 public:
  JoinedThreads() = default;
  // Joins every thread, also those that its tasks start while it waits.
  ~JoinedThreads();
  JoinedThreads(const JoinedThreads&) = delete;
  JoinedThreads& operator=(const JoinedThreads&) = delete;

  // Runs `f` on a thread of its own; the future holds its result or exception. Threads whose
  // task has finished are joined here, so the set holds only the running ones.
  template <typename F>
  auto start(F&& f) -> std::future<decltype(f())> {
    using R = decltype(f());
    auto task = std::make_shared<std::packaged_task<R()>>(std::forward<F>(f));
    auto future = task->get_future();
    launch([task] { (*task)(); });
    return future;
  }

 private:
  void launch(std::function<void()> task);
  void finished(uint64_t id);

  std::mutex mutex_;
  uint64_t next_id_ = 0;
  std::map<uint64_t, std::thread> running_;
  std::vector<uint64_t> finished_;  // their task is over; joined by the next launch
};

}  // namespace ballast
