// The baseline every other micro-benchmark is reported against: memcpy of the same bytes
// between two resident buffers.
#include <cstring>

#include <benchmark/benchmark.h>

#include "bench_inputs.hpp"

namespace ballast::bench {
namespace {

void BM_memcpy(benchmark::State& state) {
  const auto source = patterned_bytes(kStreamBytes);
  std::vector<std::byte> target(kStreamBytes);
  for (auto _ : state) {
    std::memcpy(target.data(), source.data(), kStreamBytes);
    benchmark::DoNotOptimize(target.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kStreamBytes));
}
BENCHMARK(BM_memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace ballast::bench
