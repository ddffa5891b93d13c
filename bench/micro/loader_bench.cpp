// The public load path on in-memory safetensors (no storage in the way): opening a checkpoint
// of 320 and 3200 tensors (header parse and index), and an owned load of 64 MiB in one call,
// with 1 and 2 threads.
#include <memory>
#include <span>
#include <string>

#include <benchmark/benchmark.h>

#include "ballast/ballast.hpp"
#include "bench_inputs.hpp"

namespace ballast::bench {
namespace {

WeightSource memory_source(const std::shared_ptr<const std::string>& file) {
  MemorySource memory{.bytes = std::as_bytes(std::span(file->data(), file->size())),
                      .owner = file,
                      .format = WeightFormat::safetensors()};
  return WeightSource::memory(std::move(memory));
}

void BM_metadata(benchmark::State& state) {
  const auto tensors = static_cast<size_t>(state.range(0));
  const auto file = std::make_shared<const std::string>(safetensors_in_memory(tensors, 1u << 20));
  auto loader = make_weight_loader();
  for (auto _ : state) benchmark::DoNotOptimize(loader->get_metadata(memory_source(file)));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * tensors));
}
BENCHMARK(BM_metadata)->Arg(320)->Arg(3200)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_owned_load(benchmark::State& state) {
  const auto file = std::make_shared<const std::string>(safetensors_in_memory(64, kStreamBytes));
  WeightLoaderConfig config;
  config.read_mode = ReadMode::read;
  config.num_threads = static_cast<int>(state.range(0));
  config.enable_caching = false;
  auto loader = make_weight_loader(config);
  for (auto _ : state) benchmark::DoNotOptimize(loader->load_checkpoint(memory_source(file)));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kStreamBytes));
}
BENCHMARK(BM_owned_load)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace ballast::bench
