// The automatic read-mode policy on real files: a page-cached local file is mapped, a file
// evicted from the page cache (posix_fadvise DONTNEED) is read instead, and mmap mode maps it
// anyway because the user's choice overrides the policy.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

// Drops the file's clean pages; true when none stays resident.
bool evict(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  const size_t size = std::filesystem::file_size(path);
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return false;
  std::vector<unsigned char> resident((size + 4095) / 4096);
  bool any = ::mincore(p, size, resident.data()) != 0;
  for (unsigned char r : resident) any = any || (r & 1);
  ::munmap(p, size);
  return !any;
}

TEST(ReadModePolicy, AutomaticMapsCachedFilesAndReadsEvictedOnes) {
  TempDir dir;
  const auto path = dir.path() / "m.safetensors";
  std::vector<float> values(256 * 1024, 1.5f);
  write_file(path, safetensors_file({{"w", "F32", {256, 1024}, f32_bytes(values)}}));
  const TensorSpec spec{.name = "w", .source = WeightSource::file(path)};
  EXPECT_TRUE(make_weight_loader()->load_tensor(spec)->is_zero_copy());
  if (!evict(path)) GTEST_SKIP() << "this file system keeps the pages resident";
  auto cold = make_weight_loader()->load_tensor(spec);
  EXPECT_FALSE(cold->is_zero_copy());
  EXPECT_EQ(cold->as<float>()[1000], 1.5f);
  ASSERT_TRUE(evict(path));
  EXPECT_TRUE(make_weight_loader({.read_mode = ReadMode::mmap})->load_tensor(spec)->is_zero_copy());
}

}  // namespace
}  // namespace ballast::test
