// ThreadPool (see thread_pool.hpp).
#include "util/thread_pool.hpp"

#include <new>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "ballast/error.hpp"

namespace ballast {

ThreadPool::ThreadPool(unsigned threads, const ThreadStart& start) {
  if (threads == 0) threads = 1;
  std::string failure;
  try {
    workers_.reserve(threads);
    for (unsigned i = 0; i < threads; ++i)
      workers_.push_back(start ? start([this] { work(); }) : std::thread([this] { work(); }));
  } catch (const std::system_error& e) {
    failure = e.what();
  } catch (const std::bad_alloc&) {
    failure = "out of memory";
  } catch (...) {  // whatever a test's start throws: the started workers are joined first
    stop_and_join();
    throw;
  }
  if (failure.empty()) return;
  // A joinable std::thread destroyed by the unwinding would end the process (std::terminate).
  stop_and_join();
  throw Error(ErrorCode::limit_exceeded,
              fmt::format("the system refused worker thread {} of {} ({}); ask for fewer threads",
                          workers_.size() + 1, threads, failure));
}

ThreadPool::~ThreadPool() { stop_and_join(); }

void ThreadPool::stop_and_join() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
  }
  ready_.notify_one();
}

void ThreadPool::post_front(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_front(std::move(task));
  }
  ready_.notify_one();
}

void ThreadPool::work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace ballast
