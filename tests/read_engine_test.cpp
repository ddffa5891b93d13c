// The read engine on real files: every I/O method (pread, io_uring, O_DIRECT) and the pread
// fallback return exactly the file's bytes for ranges at odd offsets, split into many chunks
// read by pool helpers, with staging budgets down to one page; errors and ranges past the end.
// The O_DIRECT sweep over many ranges: overlapping, unordered, empty, far apart; each reported
// done exactly once; a file that shrank.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <stdexcept>

#include "ballast/error.hpp"
#include "io/batch_reader.hpp"
#include "io/buffered_reads.hpp"
#include "io/direct_sweep.hpp"
#include "io/file_source.hpp"
#include "io/read_engine.hpp"
#include "support/test_support.hpp"
#include "util/parallel_for.hpp"
#include "util/thread_pool.hpp"

namespace ballast::test {
namespace {

class ReadEngineTest : public testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(7);
    bytes_.resize(3 * 1024 * 1024 + 12345);
    for (auto& c : bytes_) c = static_cast<char>(rng());
    path_ = dir_ / "data.bin";
    write_file(path_, bytes_);
  }
  std::string expected(uint64_t offset, uint64_t n) const { return bytes_.substr(offset, n); }
  static std::string text(const std::vector<std::byte>& v) {
    return {reinterpret_cast<const char*>(v.data()), v.size()};
  }

  TempDir dir_;
  std::filesystem::path path_;
  std::string bytes_;
};

TEST_F(ReadEngineTest, EveryMethodReadsTheExactBytes) {
  auto source = open_file_source(path_, file_open_options(ReadMode::read, real_os()));
  ThreadPool pool(3);
  const std::vector<std::pair<uint64_t, uint64_t>> ranges = {
      {0, bytes_.size()},     {1, 1}, {4095, 4098}, {12345, 2 * 1024 * 1024 + 7},
      {bytes_.size() - 5, 5}, {0, 0}};
  for (IoMethod method : {IoMethod::pread, IoMethod::io_uring, IoMethod::direct})
    for (uint64_t chunk : {uint64_t{4096 * 3 + 1}, uint64_t{1} << 20, uint64_t{64} << 20})
      for (uint64_t staging : {uint64_t{4096}, uint64_t{1} << 20, uint64_t{32} << 20})
        for (auto [offset, n] : ranges) {
          SCOPED_TRACE(testing::Message()
                       << "method " << static_cast<int>(method) << " chunk " << chunk << " staging "
                       << staging << " at " << offset << "+" << n);
          std::vector<std::byte> out(n);
          read_into(*source, offset, out,
                    {.method = method,
                     .chunk_bytes = chunk,
                     .staging_bytes_per_thread = staging,
                     .pool = &pool,
                     .helpers = 2});
          ASSERT_EQ(text(out), expected(offset, n));
        }
}

TEST_F(ReadEngineTest, SlicesOfFilesReadAtTheirOffset) {
  auto file = open_file_source(path_);
  auto slice = make_slice_source(file, 1000, 2 * 1024 * 1024);
  std::vector<std::byte> out(1 << 20);
  for (IoMethod method : {IoMethod::pread, IoMethod::io_uring, IoMethod::direct}) {
    read_into(*slice, 333, out, {.method = method, .chunk_bytes = 100000});
    EXPECT_EQ(text(out), expected(1333, out.size()));
  }
}

TEST_F(ReadEngineTest, ThePreadFallbackOfTheBatchReaderMatches) {
  auto source = open_file_source(path_);
  auto file = *local_file_of(*source, true);
  std::vector<std::byte> out(2 * 1024 * 1024 + 3);
  read_buffered(file, 17, out, false, "f");
  EXPECT_EQ(text(out), expected(17, out.size()));
  if (file.direct_fd >= 0) {
    std::fill(out.begin(), out.end(), std::byte{0});
    const DirectRange range{17, out};
    sweep_direct(file, {&range, 1}, {.staging_bytes_per_thread = 8192, .use_uring = false}, "f");
    EXPECT_EQ(text(out), expected(17, out.size()));
  }
}

// Ranges at odd offsets, overlapping, out of order, empty and far apart in one sweep.
std::vector<std::pair<uint64_t, uint64_t>> scattered_ranges(uint64_t file_size) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges = {
      {file_size - 5, 5}, {0, 1},
      {4095, 4098},       {100, 0},
      {5000, 3 << 20},    {5001, 10},
      {2 << 20, 300000},  {file_size - 1, 1},
      {1 << 20, 1 << 20}, {(1 << 20) + 1, (1 << 20) - 1}};
  std::mt19937 rng(3);
  for (int i = 0; i < 200; ++i) {
    const uint64_t at = rng() % file_size;
    ranges.emplace_back(at, rng() % std::min<uint64_t>(file_size - at, 70000));
  }
  return ranges;
}

TEST_F(ReadEngineTest, OneSweepReadsManyRangesAndReportsEachOnce) {
  auto source = open_file_source(path_);
  const auto file = *local_file_of(*source, true);
  if (file.direct_fd < 0) GTEST_SKIP() << "this file system refuses O_DIRECT";
  ThreadPool pool(3);
  const auto wanted = scattered_ranges(bytes_.size());
  for (bool uring : {true, false})
    for (uint64_t staging : {uint64_t{4096}, uint64_t{64} << 10, uint64_t{32} << 20}) {
      SCOPED_TRACE(testing::Message() << "uring " << uring << " staging " << staging);
      std::vector<std::vector<std::byte>> outs;
      std::vector<DirectRange> ranges;
      for (auto [offset, n] : wanted) outs.emplace_back(n);
      for (size_t i = 0; i < wanted.size(); ++i) ranges.push_back({wanted[i].first, outs[i]});
      std::vector<std::atomic<int>> reported(ranges.size());
      sweep_direct(
          file, ranges,
          {.staging_bytes_per_thread = staging, .use_uring = uring, .pool = &pool, .helpers = 2},
          "f", [&](size_t i) { ++reported[i]; });
      for (size_t i = 0; i < ranges.size(); ++i) {
        ASSERT_EQ(reported[i].load(), 1) << "range " << i;
        ASSERT_EQ(text(outs[i]), expected(wanted[i].first, wanted[i].second)) << "range " << i;
      }
    }
}

TEST_F(ReadEngineTest, ASweepOfAFileThatShrankFailsNamingTheOffset) {
  auto source = open_file_source(path_);
  const auto file = *local_file_of(*source, true);
  if (file.direct_fd < 0) GTEST_SKIP() << "this file system refuses O_DIRECT";
  std::filesystem::resize_file(path_, 1 << 20);
  std::vector<std::byte> early(1000), late(5000);
  const std::vector<DirectRange> ranges = {{10, early}, {(1 << 20) - 100, late}};
  std::vector<size_t> reported;
  try {
    sweep_direct(file, ranges, {.staging_bytes_per_thread = 8192}, "f",
                 [&](size_t i) { reported.push_back(i); });
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
    EXPECT_NE(std::string(e.what()).find("shrank"), std::string::npos) << e.what();
    EXPECT_EQ(e.context().offset, uint64_t{1} << 20);
  }
  EXPECT_EQ(reported, std::vector<size_t>{0});
  EXPECT_EQ(text(early), expected(10, early.size()));
}

TEST_F(ReadEngineTest, MemorySourcesAreCopiedInChunks) {
  auto source = make_memory_source(
      std::vector<std::byte>(reinterpret_cast<const std::byte*>(bytes_.data()),
                             reinterpret_cast<const std::byte*>(bytes_.data()) + bytes_.size()),
      "memory");
  ThreadPool pool(2);
  std::vector<std::byte> out(bytes_.size() - 10);
  read_into(*source, 10, out, {.chunk_bytes = 65536, .pool = &pool, .helpers = 1});
  EXPECT_EQ(text(out), expected(10, out.size()));
}

TEST_F(ReadEngineTest, RangesPastTheEndAreRejected) {
  auto source = open_file_source(path_);
  std::vector<std::byte> out(10);
  for (IoMethod method : {IoMethod::pread, IoMethod::io_uring, IoMethod::direct}) {
    try {
      read_into(*source, bytes_.size() - 5, out, {.method = method});
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_format);
    }
  }
}

TEST(ParallelFor, RunsEveryIterationOnceAndNestsOnOnePool) {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> hits(1000);
  // Outer iterations run on the pool and each runs an inner loop on the same pool.
  parallel_for(&pool, 2, 10, [&](size_t i) {
    parallel_for(&pool, 2, 100, [&](size_t j) { ++hits[i * 100 + j]; });
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ParallelFor, ReportsTheFirstFailureAndStops) {
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  EXPECT_THROW(parallel_for(&pool, 2, 100000,
                            [&](size_t i) {
                              ++ran;
                              if (i == 3) throw std::runtime_error("boom");
                            }),
               std::runtime_error);
  EXPECT_LT(ran.load(), 100000);
}

TEST(BatchReader, ReportsWhetherIoUringIsUsed) {
  // Either answer is valid (containers often forbid io_uring); both paths are tested above.
  BatchReader reader(*real_os(), true);
  EXPECT_EQ(reader.uses_uring(), io_uring_available());
  BatchReader plain(*real_os(), false);
  EXPECT_FALSE(plain.uses_uring());
}

}  // namespace
}  // namespace ballast::test
