// The O_DIRECT sweep: reads any number of byte ranges of one local file with O_DIRECT, which
// bypasses the page cache, keeping the device's queue full from the first read to the last.
// The union of the ranges is cut into aligned windows (1 MiB, or less under a small staging
// budget). Every thread taking part keeps as many windows in flight as its bounce buffers hold;
// as each window lands it copies the bytes of every range the window overlaps into place, then
// takes the next window, in file order, from one cursor all threads share. Reading range by
// range (tensor by tensor) would drain each thread's queue at every range's end; the sweep
// drains it once, at the end of the file. Ranges finish roughly in file order, each reported
// the moment its last byte is copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "io/local_file.hpp"

namespace ballast {

class ThreadPool;

// Source bytes [offset, offset + out.size()) go to out; offset is relative to file.base.
struct DirectRange {
  uint64_t offset = 0;
  std::span<std::byte> out;
};

struct DirectSweepOptions {
  // Bounce memory each thread may use: rounded down to whole 4 KiB pages, at least one.
  uint64_t staging_bytes_per_thread = 32 << 20;
  bool use_uring = true;       // false reads with pread (one window at a time per thread)
  ThreadPool* pool = nullptr;  // helpers come from here; null reads on the calling thread only
  unsigned helpers = 0;
};

// Reads every range of `file` (whose direct_fd must be open). Ranges may overlap, come in any
// order and be empty. `on_range_done(i)`, when given, runs once for each range i as soon as it
// is complete, on the thread that completed it. Throws Error(io) naming `name` and the file
// offset when a read fails or the file has shrunk; after an error no new window is read, and
// the call returns only once every read in flight has finished.
void sweep_direct(const LocalFile& file, std::span<const DirectRange> ranges,
                  const DirectSweepOptions& options, const std::string& name,
                  const std::function<void(size_t)>& on_range_done = {});

}  // namespace ballast
