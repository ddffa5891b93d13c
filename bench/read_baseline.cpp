// The benchmark's "plain program" baselines: reads a whole file into fresh memory and prints
// the seconds it took, including the page faults of that memory.
//   read_baseline FILE             one malloc'ed buffer, sequential 16 MiB reads
//   read_baseline FILE --direct    the same with O_DIRECT into a 4 KiB-aligned buffer
//   read_baseline FILE --threads N one 2 MiB-aligned MADV_HUGEPAGE mapping, N threads each
//                                  reading its share in 16 MiB reads: the fastest fresh-memory
//                                  read a program can do, the bound for an owned load
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kChunk = 16u << 20;
constexpr size_t kHugePage = 2u << 20;

// Reads [begin, end) of fd into buffer + begin; returns the bytes read.
size_t read_range(int fd, char* buffer, size_t begin, size_t end) {
  size_t done = begin;
  while (done < end) {
    const ssize_t n =
        pread(fd, buffer + done, std::min(kChunk, end - done), static_cast<off_t>(done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return done - begin;
}

// One fresh huge-page mapping of at least `size` bytes, 2 MiB-aligned.
char* huge_page_buffer(size_t size) {
  const size_t rounded = (size + kHugePage - 1) / kHugePage * kHugePage;
  void* raw = mmap(nullptr, rounded + kHugePage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  auto* aligned = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(raw) + kHugePage - 1) /
                                          kHugePage * kHugePage);
  madvise(aligned, rounded, MADV_HUGEPAGE);
  return aligned;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: read_baseline FILE [--direct | --threads N]\n");
    return 2;
  }
  const bool direct = argc > 2 && std::strcmp(argv[2], "--direct") == 0;
  const int threads = argc > 3 && std::strcmp(argv[2], "--threads") == 0 ? std::atoi(argv[3]) : 0;
  const auto start = std::chrono::steady_clock::now();
  int fd = open(argv[1], O_RDONLY | (direct ? O_DIRECT : 0));
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) {
    std::perror(argv[1]);
    return 1;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  const size_t capacity = (size + 4095) / 4096 * 4096;
  char* buffer = threads > 0 ? huge_page_buffer(size)
                 : direct    ? static_cast<char*>(std::aligned_alloc(4096, capacity))
                             : static_cast<char*>(std::malloc(size));
  if (buffer == nullptr) {
    std::fprintf(stderr, "read_baseline: cannot allocate %zu bytes\n", size);
    return 1;
  }
  size_t done = 0;
  if (threads > 0) {
    // Shares end on huge-page boundaries, so no two threads fault the same huge page.
    const size_t share =
        std::max(kHugePage, (size / static_cast<size_t>(threads)) / kHugePage * kHugePage);
    std::vector<size_t> got(static_cast<size_t>(threads), 0);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        const size_t begin = std::min(size, static_cast<size_t>(t) * share);
        const size_t end = t == threads - 1 ? size : std::min(size, begin + share);
        got[static_cast<size_t>(t)] = read_range(fd, buffer, begin, end);
      });
    for (auto& worker : workers) worker.join();
    for (size_t n : got) done += n;
  } else {
    done = read_range(fd, buffer, 0, direct ? capacity : size);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  unsigned sum = 0;
  for (size_t i = 0; i < size; i += 4096) sum += static_cast<unsigned char>(buffer[i]);
  std::printf("{\"seconds\": %.6f, \"bytes\": %zu, \"checksum\": %u}\n", seconds, done, sum);
  if (threads == 0) std::free(buffer);
  close(fd);
  return done >= size ? 0 : 1;
}
