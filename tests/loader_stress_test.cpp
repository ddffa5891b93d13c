// Stress: 16 threads share one loader and issue a random mix of load_tensor, load_tensors,
// get_metadata and transformed loads against several checkpoints (safetensors, torch zip,
// torch legacy) in both read modes, thousands of times, checking every result against hashes
// computed up front. Built for ThreadSanitizer and LeakSanitizer runs as much as for the
// ordinary one; the iteration count is fixed, never a time budget.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"
#include "support/torch_pickle_builder.hpp"

namespace ballast::test {
namespace {

constexpr int kThreads = 16;
constexpr int kIterationsPerThread = 250;

std::string pattern(size_t n, uint8_t seed) {
  std::string bytes(n, '\0');
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>((i * 131 + seed) & 0xff);
  return bytes;
}

struct Checkpoints {
  TempDir dir;
  std::vector<WeightSource> sources;
  std::vector<std::string> names = {"a", "b", "c"};

  Checkpoints() {
    std::vector<StTensor> st;
    for (size_t i = 0; i < names.size(); ++i)
      st.push_back({names[i], "F32", {64, 32}, pattern(64 * 32 * 4, static_cast<uint8_t>(i))});
    write_file(dir / "model.safetensors", safetensors_file(st));

    PickleBuilder p;
    p.proto(2).op('}').mark();
    std::vector<std::pair<std::string, std::string>> zip_storages;
    std::vector<LegacyStorage> legacy_storages;
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string key = std::to_string(i);
      p.str(names[i]).tensor("FloatStorage", key, 64 * 32, 0, {64, 32}, {32, 1});
      zip_storages.emplace_back(key, st[i].bytes);
      legacy_storages.push_back({key, 64 * 32, st[i].bytes});
    }
    const std::string pickle = p.op('u').stop().bytes();
    write_file(dir / "zip.pt", torch_zip_file(pickle, zip_storages));
    write_file(dir / "legacy.pt", legacy_torch_file(pickle, legacy_storages));
    for (const char* f : {"model.safetensors", "zip.pt", "legacy.pt"})
      sources.push_back(WeightSource::file(dir / f));
  }
};

TEST(LoaderStress, SixteenThreadsMixedCallsGiveTheSameBytes) {
  Checkpoints cps;
  const std::vector<Transformation> slice_cast = {Slice{0, 8, 40}, Cast{DType::f16}};
  for (ReadMode mode : {ReadMode::read, ReadMode::mmap}) {
    SCOPED_TRACE(std::string(read_mode_name(mode)));
    auto loader = make_weight_loader({.read_mode = mode, .num_threads = 4});
    // Reference hashes, from the first source, plain and transformed.
    std::map<std::string, std::string> plain, transformed;
    for (const auto& n : cps.names) {
      plain[n] = sha256_hex(*loader->load_tensor({.name = n, .source = cps.sources[0]}));
      transformed[n] = sha256_hex(*loader->load_tensor(
          {.name = n, .source = cps.sources[0], .transformations = slice_cast}));
    }
    std::atomic<int> checked{0}, failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 rng(static_cast<unsigned>(t));
        for (int i = 0; i < kIterationsPerThread; ++i) {
          const WeightSource& source = cps.sources[rng() % cps.sources.size()];
          const std::string& name = cps.names[rng() % cps.names.size()];
          switch (rng() % 4) {
            case 0:
              if (sha256_hex(*loader->load_tensor({.name = name, .source = source})) != plain[name])
                ++failures;
              break;
            case 1: {
              std::vector<TensorSpec> specs;
              for (const auto& n : cps.names) specs.push_back({.name = n, .source = source});
              auto tensors = loader->load_tensors(specs);
              for (size_t k = 0; k < tensors.size(); ++k)
                if (sha256_hex(*tensors[k]) != plain[cps.names[k]]) ++failures;
              break;
            }
            case 2:
              if (loader->get_metadata(source).tensors.size() != cps.names.size()) ++failures;
              break;
            default:
              if (sha256_hex(*loader->load_tensor(
                      {.name = name, .source = source, .transformations = slice_cast})) !=
                  transformed[name])
                ++failures;
          }
          ++checked;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(checked.load(), kThreads * kIterationsPerThread);
    EXPECT_EQ(failures.load(), 0);
  }
}

}  // namespace
}  // namespace ballast::test
