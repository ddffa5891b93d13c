// Buffered reads of one chunk of a local file with several pieces in flight (io_uring, or pread
// one after another): the read engine's io_uring strategy. O_DIRECT reads are direct_sweep.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "io/local_file.hpp"

namespace ballast {

// Reads file bytes [base + offset, + out.size()) into out with buffered reads, 16 pieces of
// 1 MiB in flight (io_uring; pread runs them one after another).
void read_buffered(const LocalFile& file, uint64_t offset, std::span<std::byte> out, bool use_uring,
                   const std::string& name);

}  // namespace ballast
