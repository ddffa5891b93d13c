// The cast kernels (src/transform/cast.hpp) over 64 MiB of input: the widening casts an engine
// runs on bf16/f16 checkpoints and the narrowing ones it runs to save memory.
#include <benchmark/benchmark.h>

#include "bench_inputs.hpp"
#include "transform/cast.hpp"

namespace ballast::bench {
namespace {

void BM_cast(benchmark::State& state, DType from, DType to) {
  const auto source = patterned_bytes(kStreamBytes);
  const size_t n = kStreamBytes / dtype_element_size(from);
  std::vector<std::byte> target(n * dtype_element_size(to));
  for (auto _ : state) {
    cast_elements(from, source.data(), to, target.data(), n);
    benchmark::DoNotOptimize(target.data());
    benchmark::ClobberMemory();
  }
  // Input bytes, as the loader's GB/s figures count them.
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kStreamBytes));
}

struct CastCase {
  const char* name;
  DType from;
  DType to;
};
constexpr CastCase kCasts[] = {{"BM_cast/bf16_to_f32", DType::bf16, DType::f32},
                               {"BM_cast/f16_to_f32", DType::f16, DType::f32},
                               {"BM_cast/f32_to_bf16", DType::f32, DType::bf16},
                               {"BM_cast/f32_to_f16", DType::f32, DType::f16}};

const bool casts_registered = [] {
  for (const CastCase& cast : kCasts)
    benchmark::RegisterBenchmark(cast.name, BM_cast, cast.from, cast.to)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  return true;
}();

}  // namespace
}  // namespace ballast::bench
