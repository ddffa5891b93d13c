// JoinedThreads (see joined_threads.hpp).
#include "util/joined_threads.hpp"

namespace ballast {

JoinedThreads::~JoinedThreads() {
  for (;;) {
    std::map<uint64_t, std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      threads.swap(running_);
      finished_.clear();
    }
    if (threads.empty()) return;
    for (auto& [id, thread] : threads) thread.join();
  }
}

void JoinedThreads::launch(std::function<void()> task) {
  std::vector<std::thread> done;
  {
    std::lock_guard lock(mutex_);
    for (uint64_t id : finished_) {
      auto it = running_.find(id);
      if (it == running_.end()) continue;
      done.push_back(std::move(it->second));
      running_.erase(it);
    }
    finished_.clear();
    const uint64_t id = next_id_++;
    running_.emplace(id, std::thread([this, id, task = std::move(task)] {
                       task();
                       finished(id);
                     }));
  }
  for (auto& thread : done) thread.join();
}

void JoinedThreads::finished(uint64_t id) {
  std::lock_guard lock(mutex_);
  finished_.push_back(id);
}

}  // namespace ballast
