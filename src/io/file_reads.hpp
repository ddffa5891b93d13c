// The read engine's per-chunk strategies on a local file: buffered reads with several pieces in
// flight (io_uring or pread), and O_DIRECT reads through aligned bounce buffers that bypass the
// page cache, copying each finished window into place while later windows are still in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ballast/byte_source.hpp"

namespace ballast {

// Reads file bytes [base + offset, + out.size()) into out with buffered reads, 16 pieces of
// 1 MiB in flight (io_uring; pread runs them one after another).
void read_buffered(const LocalFile& file, uint64_t offset, std::span<std::byte> out, bool use_uring,
                   const std::string& name);

// The same with O_DIRECT (file.direct_fd must be open), staging at most `staging_bytes` of
// bounce buffers (rounded to whole 4 KiB pages, at least one page).
void read_direct(const LocalFile& file, uint64_t offset, std::span<std::byte> out,
                 uint64_t staging_bytes, bool use_uring, const std::string& name);

}  // namespace ballast
