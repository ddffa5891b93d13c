// The benchmark's "plain program" baseline: reads a whole file into one fresh malloc'ed buffer
// with sequential 16 MiB reads (or, with --direct, O_DIRECT reads into a 4 KiB-aligned buffer)
// and prints the seconds it took, including the page faults of the fresh buffer.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: read_baseline FILE [--direct]\n");
    return 2;
  }
  const bool direct = argc > 2 && std::strcmp(argv[2], "--direct") == 0;
  const auto start = std::chrono::steady_clock::now();
  int fd = open(argv[1], O_RDONLY | (direct ? O_DIRECT : 0));
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) {
    std::perror(argv[1]);
    return 1;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  const size_t chunk = 16u << 20;
  const size_t capacity = (size + 4095) / 4096 * 4096;
  auto* buffer =
      static_cast<char*>(direct ? std::aligned_alloc(4096, capacity) : std::malloc(size));
  size_t done = 0;
  while (done < size) {
    ssize_t n = pread(fd, buffer + done, std::min(chunk, (direct ? capacity : size) - done),
                      static_cast<off_t>(done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  unsigned sum = 0;
  for (size_t i = 0; i < size; i += 4096) sum += static_cast<unsigned char>(buffer[i]);
  std::printf("{\"seconds\": %.6f, \"bytes\": %zu, \"checksum\": %u}\n", seconds, done, sum);
  std::free(buffer);
  close(fd);
  return done >= size ? 0 : 1;
}
