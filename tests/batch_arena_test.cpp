// The batch arena: the large owned host tensors of a batch load are packed into one huge-page
// mapping, aligned and disjoint; a small allocation, or one that does not fit, gets a buffer
// of its own;
// releasing a tensor gives back every 2 MiB page no live tensor is on, and never a byte of a
// live one; the mapping goes with its last tensor.
#include "core/batch_arena.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "ballast/ballast.hpp"
#include "ballast/storage.hpp"
#include "core/host_memory.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

constexpr uint64_t kMiB = 1 << 20;

uintptr_t address(const std::byte* p) { return reinterpret_cast<uintptr_t>(p); }

// How many of the 4 KiB pages in [begin, end) are resident; -1 when part of it is unmapped.
int64_t resident_pages(const std::byte* begin, const std::byte* end) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = address(begin) / page * page;
  const size_t count = (address(end) - first + page - 1) / page;
  std::vector<unsigned char> flags(count);
  if (mincore(reinterpret_cast<void*>(first), address(end) - first, flags.data()) != 0)
    return errno == ENOMEM ? -1 : -2;
  return std::count_if(flags.begin(), flags.end(), [](unsigned char f) { return f & 1; });
}

bool all_bytes_are(const Storage& s, std::byte value) {
  return std::all_of(s.data(), s.data() + s.size(), [&](std::byte b) { return b == value; });
}

TEST(BatchArena, LargeAllocationsArePackedAlignedAndDisjoint) {
  auto arena = BatchArena::reserve(20 * kMiB);
  ASSERT_TRUE(arena);
  auto a = arena->allocate(kArenaMinimumBytes + 1000, 64);
  auto b = arena->allocate(kArenaMinimumBytes + 3000, 4096);
  auto c = arena->allocate(5 * kMiB, 64);
  for (const auto& s : {a, b, c}) EXPECT_EQ(s->kind(), StorageKind::host_buffer);
  EXPECT_EQ(a->size(), kArenaMinimumBytes + 1000);
  EXPECT_EQ(address(a->data()) % (2 * kMiB), 0u) << "the arena starts on a huge page";
  EXPECT_EQ(address(b->data()), address(a->data()) + kArenaMinimumBytes + 4096);
  EXPECT_EQ(address(c->data()), address(b->data()) + kArenaMinimumBytes + 3008)
      << "packed: no page rounding";
  std::memset(a->data(), 1, a->size());
  std::memset(b->data(), 2, b->size());
  std::memset(c->data(), 3, c->size());
  EXPECT_TRUE(all_bytes_are(*a, std::byte{1}));
  EXPECT_TRUE(all_bytes_are(*b, std::byte{2}));
  EXPECT_TRUE(all_bytes_are(*c, std::byte{3}));
}

// Small tensors filled side by side by different threads would fault the same huge page.
TEST(BatchArena, SmallAllocationsAndWhatDoesNotFitGetBuffersOfTheirOwn) {
  auto arena = BatchArena::reserve(6 * kMiB);
  ASSERT_TRUE(arena);
  auto inside = arena->allocate(kArenaMinimumBytes, 64);
  const uintptr_t begin = address(inside->data()), end = begin + 6 * kMiB;
  auto outside = [&](const std::shared_ptr<Storage>& s) {
    return address(s->data()) + s->size() <= begin || address(s->data()) >= end;
  };
  auto small = arena->allocate(1000, 64);
  auto too_large = arena->allocate(kArenaMinimumBytes, 64);
  EXPECT_TRUE(outside(small));
  EXPECT_TRUE(outside(too_large));
  for (const auto& s : {small, too_large}) {
    EXPECT_EQ(s->kind(), StorageKind::host_buffer);
    std::memset(s->data(), 9, s->size());
    EXPECT_TRUE(all_bytes_are(*s, std::byte{9}));
  }
  EXPECT_THROW(arena->allocate(kArenaMinimumBytes, 24), Error) << "a bad alignment is refused";
}

TEST(BatchArena, AReleasedTensorGivesBackThePagesNoLiveTensorIsOn) {
  auto arena = BatchArena::reserve(18 * kMiB);
  ASSERT_TRUE(arena);
  const uint64_t size = 6 * kMiB - 4096;  // a and b share a huge page, as do b and c
  auto a = arena->allocate(size, 64);
  auto b = arena->allocate(size, 64);
  auto c = arena->allocate(size, 64);
  std::memset(a->data(), 1, size);
  std::memset(b->data(), 2, size);
  std::memset(c->data(), 3, size);
  const std::byte* b_begin = b->data();
  const std::byte* b_end = b->data() + size;
  const int64_t before = resident_pages(b_begin, b_end);
  EXPECT_EQ(before, static_cast<int64_t>(size / 4096));
  b.reset();
  // b's pages that a or c still use stay: the huge pages b shared with them (4 MiB) at most.
  const int64_t after = resident_pages(b_begin, b_end);
  EXPECT_LE(after, static_cast<int64_t>(4 * kMiB / 4096));
  EXPECT_LT(after, before);
  EXPECT_TRUE(all_bytes_are(*a, std::byte{1}));
  EXPECT_TRUE(all_bytes_are(*c, std::byte{3}));

  const std::byte* arena_begin = a->data();
  arena.reset();
  a.reset();
  EXPECT_GE(resident_pages(arena_begin, arena_begin + 18 * kMiB), 0) << "c keeps the mapping";
  c.reset();
  EXPECT_EQ(resident_pages(arena_begin, arena_begin + 18 * kMiB), -1)
      << "the mapping is unmapped with its last tensor";
}

TEST(BatchArena, APageStaysWhileAnyTensorOnItLives) {
  auto arena = BatchArena::reserve(12 * kMiB);
  ASSERT_TRUE(arena);
  const uint64_t size = kArenaMinimumBytes + 100;  // the two share the huge page at 4 MiB
  auto first = arena->allocate(size, 64);
  auto neighbour = arena->allocate(size, 64);
  std::memset(first->data(), 4, size);
  std::memset(neighbour->data(), 5, size);
  const std::byte* shared_page = first->data() + 4 * kMiB;
  first.reset();
  EXPECT_EQ(resident_pages(shared_page, shared_page + 2 * kMiB), int64_t(2 * kMiB / 4096));
  EXPECT_TRUE(all_bytes_are(*neighbour, std::byte{5}));
  auto later = arena->allocate(size, 64);  // placed after the bump pointer, never reusing space
  std::memset(later->data(), 6, size);
  EXPECT_TRUE(all_bytes_are(*neighbour, std::byte{5}));
  EXPECT_TRUE(all_bytes_are(*later, std::byte{6}));
}

// Threads allocate, fill and release tensors that share pages, in random order: no tensor
// ever loses a byte to a page released under it.
TEST(BatchArena, ConcurrentAllocationsAndReleasesKeepEveryLiveByte) {
  constexpr int kThreads = 4, kPerThread = 24;
  auto arena = BatchArena::reserve(kThreads * kPerThread * (kArenaMinimumBytes + kMiB + 64));
  ASSERT_TRUE(arena);
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 random(static_cast<unsigned>(t));
      std::vector<std::pair<std::shared_ptr<Storage>, std::byte>> live;
      for (int i = 0; i < kPerThread; ++i) {
        const uint64_t size = kArenaMinimumBytes + random() % kMiB;
        const auto value = static_cast<std::byte>(1 + (t * kPerThread + i) % 255);
        auto s = arena->allocate(size, 64);
        std::memset(s->data(), static_cast<int>(value), size);
        live.emplace_back(std::move(s), value);
        if (random() % 2) live.erase(live.begin() + random() % live.size());
        for (const auto& [storage, byte] : live)
          if (!all_bytes_are(*storage, byte)) ++failures[t];
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, std::vector<int>(kThreads, 0));
}

// Through the loader: a batch's owned tensors are packed one after another (a loader that
// gave each its own mapping would start each on a 2 MiB boundary), bytes exact, and dropping
// some leaves the rest intact.
TEST(BatchArena, ABatchLoadPacksItsOwnedTensors) {
  TempDir dir;
  std::vector<StTensor> tensors;
  for (int i = 0; i < 6; ++i)
    tensors.push_back({"w" + std::to_string(i),
                       "F32",
                       {int64_t(kArenaMinimumBytes / 4 + 25)},
                       std::string(kArenaMinimumBytes + 100, static_cast<char>('a' + i))});
  const auto path = dir / "m.safetensors";
  write_file(path, safetensors_file(tensors));
  for (ReadMode mode : {ReadMode::read, ReadMode::direct}) {
    WeightLoaderConfig config;
    config.read_mode = mode;
    auto loaded = make_weight_loader(config)->load_checkpoint(WeightSource::file(path));
    ASSERT_EQ(loaded.size(), tensors.size());
    std::vector<const Tensor*> by_address;
    for (const auto& [name, t] : loaded) by_address.push_back(t.get());
    std::sort(by_address.begin(), by_address.end(),
              [](auto* x, auto* y) { return x->data() < y->data(); });
    for (size_t k = 1; k < by_address.size(); ++k)
      EXPECT_LT(address(by_address[k]->data()) - address(by_address[k - 1]->data()),
                kArenaMinimumBytes + 100 + 64)
          << "tensors of one batch are packed in one arena";
    loaded.erase("w1");
    loaded.erase("w4");
    for (const auto& [name, t] : loaded) {
      EXPECT_EQ(t->storage()->kind(), StorageKind::host_buffer) << name;
      EXPECT_EQ(address(t->data()) % 64, 0u) << name;
      const auto want = static_cast<std::byte>('a' + (name[1] - '0'));
      EXPECT_TRUE(std::all_of(t->data(), t->data() + t->nbytes(), [&](std::byte b) {
        return b == want;
      })) << name;
    }
  }
}

}  // namespace
}  // namespace ballast::test
