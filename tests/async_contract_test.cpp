// The C++ async contract as an engine author uses it (include/ballast/loader.hpp): a streaming
// callback that throws is never called again, whatever the thread count; a callback may make
// blocking loads through the same loader; a loader may be destroyed with any asynchronous call
// in flight (its destructor waits, and every future still gets its result). AsyncStress mixes
// these at random points, seeded and with a fixed number of rounds, for the ordinary, TSan and
// ASan builds alike.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

constexpr size_t kWeights = 24;

std::string weight_name(size_t i) { return "w." + std::to_string(i); }
std::string scale_name(size_t i) { return "s." + std::to_string(i); }

// Every weight (64x64 f32) has a scale (64 f32); the bytes of each tensor are distinct.
class AsyncContract : public testing::Test {
 protected:
  void SetUp() override {
    std::vector<StTensor> tensors;
    for (size_t i = 0; i < kWeights; ++i) {
      tensors.push_back({weight_name(i), "F32", {64, 64}, pattern_bytes(64 * 64 * 4, int(i))});
      tensors.push_back({scale_name(i), "F32", {64}, pattern_bytes(64 * 4, int(i + 100))});
    }
    path_ = dir_ / "model.safetensors";
    write_file(path_, safetensors_file(tensors));
    for (const auto& t : tensors) want_[t.name] = t.bytes;
  }

  WeightSource source() const { return WeightSource::file(path_); }
  std::vector<TensorSpec> weight_specs() const {
    std::vector<TensorSpec> specs;
    for (size_t i = 0; i < kWeights; ++i)
      specs.push_back({.name = weight_name(i), .source = source()});
    return specs;
  }
  // The read mode makes every tensor a read on the loader's threads (no zero-copy views).
  static std::unique_ptr<WeightLoader> loader(int threads) {
    return make_weight_loader({.read_mode = ReadMode::read, .num_threads = threads});
  }
  bool intact(const TensorRef& t) const {
    auto it = want_.find(t->name());
    return it != want_.end() &&
           std::string(reinterpret_cast<const char*>(t->data()), t->nbytes()) == it->second;
  }
  // The scale of weight "w.<i>", as the weight's name gives it.
  static std::string scale_of(const std::string& weight) { return "s." + weight.substr(2); }

  TempDir dir_;
  std::filesystem::path path_;
  std::map<std::string, std::string> want_;
};

// The callback throws on its first call, after a pause in which every other loader thread
// finishes a tensor: before, each of them then made one more call (3 with 4 threads).
TEST_F(AsyncContract, NoCallAfterTheCallbackThrows) {
  for (int threads : {1, 2, 4, 8}) {
    SCOPED_TRACE(threads);
    auto l = loader(threads);
    std::atomic<int> calls{0};
    const Error e = error_of([&] {
      l->load_tensors_streaming(weight_specs(), [&](const std::string&, TensorRef) {
        if (++calls == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          throw Error(ErrorCode::cancelled, "enough");
        }
      });
    });
    EXPECT_EQ(e.code(), ErrorCode::cancelled);
    EXPECT_EQ(calls.load(), 1);
  }
}

// A callback's exception of its own type is the one the load reports.
TEST_F(AsyncContract, TheCallbacksOwnExceptionIsReported) {
  auto l = loader(4);
  int calls = 0;
  EXPECT_THROW(l->load_tensors_streaming(weight_specs(),
                                         [&](const std::string&, TensorRef) {
                                           if (++calls == 3) throw std::runtime_error("mine");
                                         }),
               std::runtime_error);
  EXPECT_EQ(calls, 3);
}

// The natural pattern: when a weight arrives, load its scale, blocking, through the same
// loader. Before, every thread count up to 4 deadlocked (the loader threads waited on the
// callback's lock while the callback waited on a loader thread).
TEST_F(AsyncContract, NestedBlockingLoadsInsideTheCallback) {
  for (int threads : {1, 2, 4}) {
    SCOPED_TRACE(threads);
    auto l = loader(threads);
    std::map<std::string, TensorRef> got;
    l->load_tensors_streaming(weight_specs(), [&](const std::string& name, TensorRef w) {
      got[name] = std::move(w);
      const std::string scale = scale_of(name);
      got[scale] = l->load_tensor({.name = scale, .source = source()});
      // Every blocking form, once each: a batch, a checkpoint, a nested stream, metadata.
      if (name == weight_name(0)) {
        EXPECT_EQ(l->load_tensors(weight_specs()).size(), kWeights);
        EXPECT_EQ(l->load_checkpoint(source(), {"s.*"}).size(), kWeights);
        int inner = 0;
        l->load_tensors_streaming(weight_specs(), [&](const std::string&, TensorRef) { ++inner; });
        EXPECT_EQ(inner, int(kWeights));
        EXPECT_EQ(l->get_metadata(source()).tensors.size(), 2 * kWeights);
      }
    });
    ASSERT_EQ(got.size(), 2 * kWeights);
    for (const auto& [name, t] : got) EXPECT_TRUE(intact(t)) << name;
  }
}

// Before, load_checkpoint_async's thread used the destroyed loader (SIGSEGV, or a hang).
TEST_F(AsyncContract, LoaderDestroyedWithACheckpointLoadInFlight) {
  for (int round = 0; round < 20; ++round) {
    auto l = loader(1 + round % 4);
    auto pending = l->load_checkpoint_async(source());
    l.reset();
    auto all = pending.get();
    ASSERT_EQ(all.size(), 2 * kWeights);
    for (const auto& [name, t] : all) EXPECT_TRUE(intact(t)) << name;
  }
}

// A loader of its own that provides only the required calls (here by forwarding them to a
// default loader it owns): WeightLoader's fallbacks for streaming and load_checkpoint_async.
class ForwardingLoader final : public WeightLoader {
 public:
  explicit ForwardingLoader(int threads)
      : inner_(make_weight_loader({.read_mode = ReadMode::read, .num_threads = threads})) {}
  std::future<TensorRef> load_tensor_async(TensorSpec spec) override {
    return inner_->load_tensor_async(std::move(spec));
  }
  std::future<std::vector<TensorRef>> load_tensors_async(std::vector<TensorSpec> specs) override {
    return inner_->load_tensors_async(std::move(specs));
  }
  std::future<bool> is_available_async(WeightSource source) override {
    return inner_->is_available_async(std::move(source));
  }
  std::future<WeightMetadata> get_metadata_async(WeightSource source) override {
    return inner_->get_metadata_async(std::move(source));
  }
  std::future<void> preload_async(WeightSource source) override {
    return inner_->preload_async(std::move(source));
  }
  WeightLoaderCapabilities capabilities() const override { return inner_->capabilities(); }

 private:
  std::unique_ptr<WeightLoader> inner_;
};

// Before, the fallback's thread called the destroyed loader.
TEST_F(AsyncContract, FallbacksKeepNoReferenceToTheirLoader) {
  for (int round = 0; round < 8; ++round) {
    auto l = std::make_unique<ForwardingLoader>(1 + round % 3);
    auto checkpoint = l->load_checkpoint_async(source(), {"w.*"});
    int streamed = 0;
    auto stream =
        l->load_tensors_streaming_async(weight_specs(), [&](const std::string&, TensorRef w) {
          if (intact(w)) ++streamed;
        });
    l.reset();
    auto all = checkpoint.get();
    ASSERT_EQ(all.size(), kWeights);
    for (const auto& [name, t] : all) EXPECT_TRUE(intact(t)) << name;
    stream.get();
    EXPECT_EQ(streamed, int(kWeights));
  }
  EXPECT_EQ(error_of([&] { ForwardingLoader(1).load_checkpoint(source(), {"nothing.*"}); }).code(),
            ErrorCode::not_found);
}

// Every asynchronous call, and a stream whose callback makes nested loads, in flight when the
// loader goes: the destructor waits for all of them; every future gets its result.
TEST_F(AsyncContract, LoaderDestroyedWithEveryAsyncCallInFlight) {
  auto l = loader(2);
  WeightLoader* raw = l.get();
  std::atomic<int> streamed{0};
  auto tensor = l->load_tensor_async({.name = "w.1", .source = source()});
  auto tensors = l->load_tensors_async(weight_specs());
  auto stream =
      l->load_tensors_streaming_async(weight_specs(), [&](const std::string& name, TensorRef w) {
        if (intact(w) && intact(raw->load_tensor({.name = scale_of(name), .source = source()})))
          ++streamed;
      });
  auto checkpoint = l->load_checkpoint_async(source(), {"w.*"});
  auto meta = l->get_metadata_async(source());
  auto available = l->is_available_async(source());
  auto preloaded = l->preload_async(source());
  l.reset();
  EXPECT_TRUE(intact(tensor.get()));
  EXPECT_EQ(tensors.get().size(), kWeights);
  stream.get();
  EXPECT_EQ(streamed.load(), int(kWeights));
  EXPECT_EQ(checkpoint.get().size(), kWeights);
  EXPECT_EQ(meta.get().tensors.size(), 2 * kWeights);
  EXPECT_TRUE(available.get());
  preloaded.get();
}

// Random mixes, seeded: loaders of 1 to 6 threads shared by 4 client threads that stream
// (cancelling at a random call, or not; with nested loads, or not), load batches and
// checkpoints asynchronously and leave futures pending; then the loader is dropped with that
// work in flight and every result is checked.
using AsyncStress = AsyncContract;

TEST_F(AsyncStress, RandomCancellationNestedLoadsAndDroppedLoaders) {
  constexpr int kRounds = 12;
  constexpr int kClients = 4;
  constexpr int kCallsPerClient = 6;
  std::mt19937 seeds(20261207);
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(round);
    const unsigned round_seed = seeds();
    auto l = make_weight_loader({.read_mode = round % 2 ? ReadMode::read : ReadMode::mmap,
                                 .num_threads = 1 + int(round_seed % 6)});
    std::mutex pending_mutex;
    std::vector<std::future<std::map<std::string, TensorRef>>> checkpoints;
    std::vector<std::future<std::vector<TensorRef>>> batches;
    std::vector<std::future<void>> streams;
    std::atomic<int> bad{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c) {
      clients.emplace_back([&, c] {
        std::mt19937 rng(round_seed + unsigned(c));
        for (int call = 0; call < kCallsPerClient; ++call) {
          switch (rng() % 4) {
            case 0: {  // cancel at a random call (or never: past the last tensor)
              const int cancel_at = 1 + int(rng() % (kWeights + 4));
              const bool nested = rng() % 2;
              std::atomic<int> calls{0};
              std::atomic<bool> after_throw{false};
              try {
                l->load_tensors_streaming(
                    weight_specs(), [&](const std::string& name, TensorRef w) {
                      if (after_throw) ++bad;
                      if (!intact(w)) ++bad;
                      if (nested &&
                          !intact(l->load_tensor({.name = scale_of(name), .source = source()})))
                        ++bad;
                      if (++calls == cancel_at) {
                        after_throw = true;
                        throw Error(ErrorCode::cancelled, "client stops");
                      }
                    });
                if (cancel_at <= int(kWeights) || calls != int(kWeights)) ++bad;
              } catch (const Error& e) {
                if (e.code() != ErrorCode::cancelled || calls != cancel_at) ++bad;
              }
              break;
            }
            case 1: {
              std::lock_guard lock(pending_mutex);
              checkpoints.push_back(l->load_checkpoint_async(source(), {"s.*"}));
              break;
            }
            case 2: {
              std::lock_guard lock(pending_mutex);
              batches.push_back(l->load_tensors_async(weight_specs()));
              break;
            }
            default: {  // a stream left in flight, whose callback loads through the loader
              WeightLoader* raw = l.get();
              std::lock_guard lock(pending_mutex);
              streams.push_back(l->load_tensors_streaming_async(
                  weight_specs(), [&, raw](const std::string& name, TensorRef w) {
                    if (!intact(w) ||
                        !intact(raw->load_tensor({.name = scale_of(name), .source = source()})))
                      ++bad;
                  }));
            }
          }
        }
      });
    }
    for (auto& client : clients) client.join();
    l.reset();  // with the pending futures' work still in flight
    for (auto& f : checkpoints)
      for (const auto& [name, t] : f.get())
        if (!intact(t)) ++bad;
    for (auto& f : batches)
      for (const auto& t : f.get())
        if (!intact(t)) ++bad;
    for (auto& f : streams) f.get();
    EXPECT_EQ(bad.load(), 0);
  }
}

}  // namespace
}  // namespace ballast::test
