// Availability and preload (see preload.hpp).
#include "loader/preload.hpp"

#include <fcntl.h>

#include "ballast/error.hpp"
#include "io/os.hpp"
#include "remote/lazy_cached_source.hpp"

namespace ballast {

bool source_available(const WeightSource& source, const CheckpointCache& cache) {
  try {
    auto store = cache.store_of(source);
    return store->exists(store->named());
  } catch (Error& e) {
    e.with_source(describe(source));
    throw;
  }
}

void preload_source(const WeightSource& source, CheckpointCache& cache, bool caching) {
  if (cache.store_of(source)->remote() && !caching) {
    CheckpointOptions options = cache.options();
    options.shards_in_memory = true;
    auto fresh = cache.open_fresh(source, options);
    fresh.checkpoint->entries();
    cache.remember(fresh.key, fresh.checkpoint);
    return;
  }
  auto cp = cache.checkpoint(source);
  cp->entries();
  for (const auto& bytes : cp->shard_bytes()) fill_cache(*bytes);
  for (const auto& path : cp->files()) {
    const Os& os = *cache.options().os;
    int fd = os.open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0);
    if (fd < 0) continue;
    os.fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
    os.close(fd);
  }
}

}  // namespace ballast
