// Owned host memory: slabs for small allocations, dedicated huge-page mappings for large ones,
// alignment, and memory returned once its last user lets go.
#include "core/host_memory.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ballast/storage.hpp"

namespace ballast {
namespace {

uintptr_t address(const std::byte* p) { return reinterpret_cast<uintptr_t>(p); }

// Resident bytes of the mapping that holds `p`, from /proc/self/smaps.
uint64_t resident_bytes_of_mapping(const std::byte* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    if (std::istringstream range(line); range >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= address(p) && address(p) < end;
      continue;
    }
    uint64_t kib = 0;
    if (inside && line.rfind("Rss:", 0) == 0 && std::istringstream(line.substr(4)) >> kib)
      return kib * 1024;
  }
  ADD_FAILURE() << "no mapping holds the block";
  return 0;
}

TEST(HostMemory, SmallAllocationsShareOneSlabAndKeepTheirAlignment) {
  auto first = allocate_host_block(1000, 64);
  auto second = allocate_host_block(3000, 4096);
  auto third = allocate_host_block(1, 16);
  EXPECT_EQ(first.owner, second.owner);
  EXPECT_EQ(second.owner, third.owner);
  EXPECT_EQ(address(first.data) % 64, 0u);
  EXPECT_EQ(address(second.data) % 4096, 0u);
  // Carved one after another: no overlap.
  EXPECT_GE(address(second.data), address(first.data) + 1000);
  EXPECT_GE(address(third.data), address(second.data) + 3000);
  std::memset(first.data, 1, 1000);
  std::memset(second.data, 2, 3000);
  std::memset(third.data, 3, 1);
  EXPECT_EQ(first.data[999], std::byte{1});
  EXPECT_EQ(second.data[0], std::byte{2});
}

TEST(HostMemory, LargeAllocationsGetTheirOwnHugePageAlignedMapping) {
  auto small = allocate_host_block(100, 64);
  auto large = allocate_host_block(kDedicatedMappingBytes, 64);
  EXPECT_NE(small.owner, large.owner);
  EXPECT_EQ(address(large.data) % (2u << 20), 0u);
  std::memset(large.data, 7, kDedicatedMappingBytes);
  EXPECT_EQ(large.data[kDedicatedMappingBytes - 1], std::byte{7});
}

// A dedicated mapping ends at the block's last 4 KiB page: a 5 MiB block is not resident as
// 6 MiB because its last huge page was only half used.
TEST(HostMemory, ALargeBlockIsResidentAsItsOwnPagesOnly) {
  const uint64_t size = (5u << 20) + 100;
  auto large = allocate_host_block(size, 64);
  std::memset(large.data, 3, size);
  const uint64_t pages = (size + 4095) / 4096 * 4096;
  EXPECT_GE(resident_bytes_of_mapping(large.data), size);
  EXPECT_LE(resident_bytes_of_mapping(large.data), pages);
}

TEST(HostMemory, AFullSlabStartsANewOne) {
  const uint64_t piece = kDedicatedMappingBytes - 4096;
  std::vector<HostBlock> blocks;
  for (uint64_t used = 0; used <= kSlabBytes; used += piece)
    blocks.push_back(allocate_host_block(piece, 64));
  EXPECT_NE(blocks.front().owner, blocks.back().owner);
  for (auto& b : blocks) std::memset(b.data, 0x5a, piece);  // every block is usable
}

TEST(HostMemory, ASlabIsFreedWhenItsLastAllocationIs) {
  std::weak_ptr<void> slab;
  {
    auto block = allocate_host_block(512, 64);
    slab = block.owner;
    EXPECT_FALSE(slab.expired());
  }
  EXPECT_TRUE(slab.expired()) << "the allocator must not keep a slab alive by itself";
  auto next = allocate_host_block(512, 64);  // and the next allocation still works
  std::memset(next.data, 1, 512);
}

TEST(HostMemory, HostBuffersReportTheirOwnSizeAndAlignment) {
  auto small = make_host_buffer(24, 64);
  auto large = make_host_buffer(5u << 20, 4096);
  EXPECT_EQ(small->size(), 24u);
  EXPECT_EQ(large->size(), 5u << 20);
  EXPECT_EQ(address(small->data()) % 64, 0u);
  EXPECT_EQ(address(large->data()) % 4096, 0u);
  EXPECT_EQ(small->kind(), StorageKind::host_buffer);
}

}  // namespace
}  // namespace ballast
