// Buffered chunk reads (see buffered_reads.hpp).
#include "io/buffered_reads.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/batch_reader.hpp"

namespace ballast {
namespace {

constexpr uint64_t kPieceBytes = 1 << 20;  // one submitted read
constexpr unsigned kBufferedDepth = 16;

[[noreturn]] void fail(ssize_t result, const std::string& name, uint64_t offset) {
  if (result < 0)
    throw Error(ErrorCode::io,
                fmt::format("read failed: {}", std::strerror(static_cast<int>(-result))),
                {.source = name, .offset = offset});
  throw Error(ErrorCode::io, "file shrank while reading", {.source = name, .offset = offset});
}

}  // namespace

void read_buffered(const LocalFile& file, uint64_t offset, std::span<std::byte> out, bool use_uring,
                   const std::string& name) {
  // Piece i covers out[i * kPieceBytes, ...); `done[i]` bytes of it are read. A short read
  // resubmits the rest of its piece.
  const uint64_t pieces = (out.size() + kPieceBytes - 1) / kPieceBytes;
  std::vector<uint64_t> done(pieces, 0);
  auto length_of = [&](uint64_t i) {
    return std::min<uint64_t>(kPieceBytes, out.size() - i * kPieceBytes);
  };
  BatchReader reader(*file.os, use_uring);
  auto issue = [&](uint64_t i) {
    const uint64_t at = i * kPieceBytes + done[i];
    reader.submit(i, file.fd, out.data() + at, length_of(i) - done[i], file.base + offset + at);
  };
  uint64_t next = 0;
  while (next < pieces || reader.in_flight() > 0) {
    while (next < pieces && reader.in_flight() < kBufferedDepth) issue(next++);
    const auto finished = reader.wait();
    const uint64_t i = finished.tag;
    if (finished.result <= 0)
      fail(finished.result, name, file.base + offset + i * kPieceBytes + done[i]);
    done[i] += static_cast<uint64_t>(finished.result);
    if (done[i] < length_of(i)) issue(i);
  }
}

}  // namespace ballast
