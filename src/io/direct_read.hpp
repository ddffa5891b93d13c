// One O_DIRECT read into the caller's own aligned memory: the 4 KiB-aligned file range that
// covers a byte range, read straight into a page-aligned buffer (a device load's pinned staging
// slot), with no bounce buffer between. The wanted bytes then start `head` bytes into the
// buffer. The range is read in 1 MiB pieces kept in flight together (io_uring where the build
// and the Os allow it, pread otherwise), so the storage's queue stays full.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "io/local_file.hpp"

namespace ballast {

// O_DIRECT offset, length and buffer address alignment.
inline constexpr uint64_t kDirectAlignment = 4096;

// The buffer bytes that covering [offset, offset + n) of a file takes: at most n + 4095 rounded
// up to whole pages, whatever the offset.
uint64_t direct_covering_bytes(uint64_t offset, uint64_t n);

// Reads source bytes [offset, offset + n) of `file` (its direct_fd must be open; offset is
// relative to file.base) by reading their aligned covering range into `buffer`, which must be
// kDirectAlignment-aligned and at least direct_covering_bytes(file.base + offset, n) long.
// Returns where source byte `offset` landed in `buffer`. Throws Error(io) naming `name` and
// the offset when a read fails or the file ends early, Error(invalid_argument) for a buffer
// that is misaligned or too small.
uint64_t read_direct_covering(const LocalFile& file, uint64_t offset, uint64_t n,
                              std::span<std::byte> buffer, const std::string& name);

}  // namespace ballast
