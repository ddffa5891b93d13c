// The loader's checkpoint cache (see checkpoint_cache.hpp).
#include "loader/checkpoint_cache.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ballast {
namespace {

constexpr size_t kCheckpointCacheEntries = 64;

std::string key_of(const WeightSource& source, const Store& store) {
  std::string key = describe(source) + store.identity();
  if (source.format) key += "|format=" + to_string(*source.format);
  if (source.raw_layout)
    key += fmt::format("|raw={}:{}:{}", dtype_name(source.raw_layout->dtype),
                       fmt::join(source.raw_layout->shape, "x"), source.raw_layout->offset);
  return key;
}

// The source's key and its store's version tag.
std::string cache_key(const WeightSource& source, const Store& store) {
  std::string key = key_of(source, store);
  if (std::string version = store.version(store.named()); !version.empty()) key += "|" + version;
  return key;
}

}  // namespace

CheckpointCache::CheckpointCache(StoreContext stores, CheckpointOptions options)
    : stores_(std::move(stores)), options_(std::move(options)) {}

std::shared_ptr<Store> CheckpointCache::store_of(const WeightSource& source) const {
  return make_store(source, stores_);
}

std::string CheckpointCache::source_key(const WeightSource& source) const {
  return key_of(source, *store_of(source));
}

std::shared_ptr<Checkpoint> CheckpointCache::checkpoint(const WeightSource& source) {
  auto store = store_of(source);
  const std::string key = cache_key(source, *store);
  {
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.second);
      return it->second.first;
    }
  }
  auto cp = Checkpoint::open(source, std::move(store), options_);
  std::lock_guard lock(mutex_);
  if (auto it = entries_.find(key); it != entries_.end()) return it->second.first;
  insert_locked(key, cp);
  return cp;
}

CheckpointCache::Fresh CheckpointCache::open_fresh(const WeightSource& source,
                                                   const CheckpointOptions& options) const {
  auto store = store_of(source);
  std::string key = cache_key(source, *store);
  return {std::move(key), Checkpoint::open(source, std::move(store), options)};
}

void CheckpointCache::remember(const std::string& key, std::shared_ptr<Checkpoint> cp) {
  std::lock_guard lock(mutex_);
  if (auto it = entries_.find(key); it != entries_.end()) {
    lru_.erase(it->second.second);
    entries_.erase(it);
  }
  insert_locked(key, std::move(cp));
}

void CheckpointCache::insert_locked(const std::string& key, std::shared_ptr<Checkpoint> cp) {
  lru_.push_front(key);
  entries_.emplace(key, std::make_pair(std::move(cp), lru_.begin()));
  if (entries_.size() > kCheckpointCacheEntries) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
}

std::shared_ptr<Checkpoint> BatchCheckpoints::operator()(const WeightSource& source) {
  const std::string key = cache_.source_key(source);
  {
    std::lock_guard lock(mutex_);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  }
  auto cp = cache_.checkpoint(source);
  std::lock_guard lock(mutex_);
  return memo_.emplace(key, std::move(cp)).first->second;
}

}  // namespace ballast
