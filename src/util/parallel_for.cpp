// parallel_for (see parallel_for.hpp).
#include "util/parallel_for.hpp"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>

namespace ballast {
namespace {

// Shared with helper tasks, which may start after the loop is over: they then find no work
// and never touch `body`, which lives on the caller's stack.
struct LoopState {
  std::mutex mutex;
  std::condition_variable idle;
  size_t next = 0;
  size_t n = 0;
  size_t busy = 0;
  std::exception_ptr error;
  const std::function<void(size_t)>* body = nullptr;
};

void work_on(LoopState& state) {
  for (;;) {
    size_t i = 0;
    {
      std::lock_guard lock(state.mutex);
      if (state.next >= state.n || state.error) return;
      i = state.next++;
      ++state.busy;
    }
    std::exception_ptr error;
    try {
      (*state.body)(i);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard lock(state.mutex);
      if (error && !state.error) state.error = error;
      --state.busy;
    }
    state.idle.notify_all();
  }
}

}  // namespace

void parallel_for(ThreadPool* pool, unsigned helpers, size_t n,
                  const std::function<void(size_t)>& body) {
  if (n == 0) return;
  if (n == 1 || pool == nullptr || helpers == 0) {
    for (size_t i = 0; i < n; ++i) body(i);
    return;
  }
  auto state = std::make_shared<LoopState>();
  state->n = n;
  state->body = &body;
  const size_t extra = std::min<size_t>(helpers, n - 1);
  for (size_t h = 0; h < extra; ++h) pool->post_front([state] { work_on(*state); });
  work_on(*state);
  std::unique_lock lock(state->mutex);
  state->idle.wait(lock, [&] { return state->busy == 0; });
  if (state->error) std::rethrow_exception(state->error);
}

}  // namespace ballast
