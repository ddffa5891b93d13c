// The read engine: fills one destination range from a ByteSource as fast as the storage
// allows, on the calling thread and free pool workers. With pread or io_uring (buffered,
// several pieces in flight) the range is split into chunks read concurrently; with O_DIRECT it
// is one sweep (direct_sweep.hpp) whose threads keep their queues full to the range's end.
// Sources that are neither local files nor memory (HTTP) are read with one read_at call, which
// does its own splitting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "ballast/byte_source.hpp"
#include "ballast/config.hpp"

namespace ballast {

class ThreadPool;

enum class IoMethod : uint8_t { pread, io_uring, direct };

// read, automatic and mmap (for what is not mapped) use pread.
IoMethod io_method_for(ReadMode mode);

struct ReadEngineOptions {
  IoMethod method = IoMethod::pread;
  uint64_t chunk_bytes = 16 << 20;
  // Bounce memory one thread may use (O_DIRECT); the loader passes its budget / threads.
  uint64_t staging_bytes_per_thread = 32 << 20;
  ThreadPool* pool = nullptr;  // helpers come from here; null reads on the calling thread only
  unsigned helpers = 0;
};

// Reads source bytes [offset, offset + out.size()) into out. Throws Error(invalid_format) for
// a range past the end and Error(io) when a read fails.
void read_into(const ByteSource& source, uint64_t offset, std::span<std::byte> out,
               const ReadEngineOptions& options);

}  // namespace ballast
