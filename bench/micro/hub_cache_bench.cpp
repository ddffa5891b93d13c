// A checkpoint loaded from the Hub cache (offline hf://, one 256 MiB safetensors blob behind a
// snapshot symlink) with integrity checks on and off, in the default (mapped) and the copying
// read mode. Before each load the blob is touched (its change time moves), so every load with
// integrity checks on hashes the blob against its name, as the first use in a process does.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "ballast/ballast.hpp"
#include "bench_inputs.hpp"
#include "remote/sha256.hpp"

namespace ballast::bench {
namespace {

namespace fs = std::filesystem;

constexpr size_t kBlobBytes = 256u << 20;
const std::string kCommit(40, 'c');

// <tmp>/models--bench--hub/{blobs/<sha256>, snapshots/<commit>/model.safetensors}, made once.
struct HubCache {
  fs::path root = fs::temp_directory_path() / ("ballast-hub-bench-" + std::to_string(::getpid()));
  fs::path blob;

  HubCache() {
    const std::string file = safetensors_in_memory(64, kBlobBytes);
    Sha256 hash;
    hash.update(std::as_bytes(std::span(file)));
    const fs::path repo = root / "models--bench--hub";
    blob = repo / "blobs" / hash.hex();
    fs::create_directories(blob.parent_path());
    fs::create_directories(repo / "snapshots" / kCommit);
    std::ofstream(blob, std::ios::binary)
        .write(file.data(), static_cast<std::streamsize>(file.size()));
    fs::create_symlink(fs::path("../../blobs") / blob.filename(),
                       repo / "snapshots" / kCommit / "model.safetensors");
    setenv("HF_HUB_OFFLINE", "1", 1);
  }
  ~HubCache() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

const HubCache& hub_cache() {
  static const HubCache cache;
  return cache;
}

// Args: integrity checks (0/1), read mode (0: automatic, 1: read).
void BM_cached_hub_load(benchmark::State& state) {
  const HubCache& cache = hub_cache();
  WeightLoaderConfig config;
  config.enable_integrity_checks = state.range(0) != 0;
  config.read_mode = state.range(1) != 0 ? ReadMode::read : ReadMode::automatic;
  const auto source =
      WeightSource::hugging_face("bench/hub", "model.safetensors", kCommit, cache.root);
  for (auto _ : state) {
    state.PauseTiming();
    ::utimensat(AT_FDCWD, cache.blob.c_str(), nullptr, 0);  // a new change time: hashed again
    auto loader = make_weight_loader(config);
    state.ResumeTiming();
    benchmark::DoNotOptimize(loader->load_checkpoint(source));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBlobBytes));
}
BENCHMARK(BM_cached_hub_load)
    ->ArgNames({"integrity", "copy"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace ballast::bench
