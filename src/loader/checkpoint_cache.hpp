// CheckpointCache: the loader's 64 most recently used checkpoints, so a source is resolved
// and its shards parsed once, not per load. A checkpoint is keyed by its source (the
// description, its Store's identity, a forced format and raw layout) and by its Store's
// version tag, so a local file changed on disk is parsed anew. Thread-safe. BatchCheckpoints
// looks each distinct source of one batch up once.
#pragma once

#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "loader/checkpoint.hpp"
#include "remote/source_store.hpp"

namespace ballast {

class CheckpointCache {
 public:
  CheckpointCache(StoreContext stores, CheckpointOptions options);

  const CheckpointOptions& options() const { return options_; }
  // The source's Store (cheap: made anew each time).
  std::shared_ptr<Store> store_of(const WeightSource& source) const;
  // Equal keys open the same checkpoint (as long as its files do not change on disk).
  std::string source_key(const WeightSource& source) const;
  // The source's checkpoint: the one kept, else opened and kept.
  std::shared_ptr<Checkpoint> checkpoint(const WeightSource& source);
  // The source opened anew with `options`, not kept; `key` is where remember() would keep it.
  struct Fresh {
    std::string key;
    std::shared_ptr<Checkpoint> checkpoint;
  };
  Fresh open_fresh(const WeightSource& source, const CheckpointOptions& options) const;
  // Keeps `cp` as the checkpoint of `key`, replacing any earlier one.
  void remember(const std::string& key, std::shared_ptr<Checkpoint> cp);

 private:
  void insert_locked(const std::string& key, std::shared_ptr<Checkpoint> cp);

  StoreContext stores_;
  CheckpointOptions options_;
  std::mutex mutex_;
  std::list<std::string> lru_;
  std::map<std::string, std::pair<std::shared_ptr<Checkpoint>, std::list<std::string>::iterator>>
      entries_;
};

// The checkpoints of one batch: each distinct source is looked up in the cache once (a lookup
// stats a local file each time). Thread-safe.
class BatchCheckpoints {
 public:
  explicit BatchCheckpoints(CheckpointCache& cache) : cache_(cache) {}
  std::shared_ptr<Checkpoint> operator()(const WeightSource& source);

 private:
  CheckpointCache& cache_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Checkpoint>> memo_;
};

}  // namespace ballast
