// Before loading: whether a source is there (WeightLoader::is_available: its Store's object
// exists), and preloading it (WeightLoader::preload). Preload parses every shard, then reads
// each local file ahead into the page cache; a remote source, with caching on, has every shard
// downloaded into its cache, and with caching off every shard read whole into memory, and the
// loader's checkpoint cache keeps that checkpoint for later loads.
#pragma once

#include "ballast/source.hpp"
#include "loader/checkpoint_cache.hpp"

namespace ballast {

// A network failure throws, naming the source.
bool source_available(const WeightSource& source, const CheckpointCache& cache);

void preload_source(const WeightSource& source, CheckpointCache& cache, bool caching);

}  // namespace ballast
