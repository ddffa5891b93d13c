// parallel_for: runs a loop's iterations on the calling thread plus pool workers that join as
// they become free. The caller works instead of waiting on queued tasks, so a pool task may
// call it (nested parallelism on the same pool never deadlocks).
#pragma once

#include <cstddef>
#include <functional>

#include "util/thread_pool.hpp"

namespace ballast {

// Calls body(i) for every i in [0, n), on the calling thread and on up to `helpers` workers of
// `pool` (none when pool is null). Returns when every call has finished. After the first
// exception no new iteration starts; that exception is rethrown.
void parallel_for(ThreadPool* pool, unsigned helpers, size_t n,
                  const std::function<void(size_t)>& body);

}  // namespace ballast
