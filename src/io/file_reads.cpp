// Buffered and O_DIRECT chunk reads (see file_reads.hpp).
#include "io/file_reads.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/batch_reader.hpp"

namespace ballast {
namespace {

constexpr uint64_t kPieceBytes = 1 << 20;  // one submitted read
constexpr uint64_t kDirectAlign = 4096;    // O_DIRECT offset, length and address alignment
constexpr unsigned kBufferedDepth = 16;

[[noreturn]] void fail(ssize_t result, const std::string& name, uint64_t offset) {
  if (result < 0)
    throw Error(ErrorCode::io,
                fmt::format("read failed: {}", std::strerror(static_cast<int>(-result))),
                {.source = name, .offset = offset});
  throw Error(ErrorCode::io, "file shrank while reading", {.source = name, .offset = offset});
}

// A reusable bounce buffer per thread, grown on demand up to the staging budget.
std::byte* thread_bounce(uint64_t bytes) {
  struct Freer {
    void operator()(std::byte* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<std::byte, Freer> buffer;
  thread_local uint64_t size = 0;
  if (size < bytes) {
    buffer.reset(static_cast<std::byte*>(std::aligned_alloc(kDirectAlign, bytes)));
    size = buffer ? bytes : 0;
    if (!buffer) throw Error(ErrorCode::limit_exceeded, "cannot allocate O_DIRECT bounce buffers");
  }
  return buffer.get();
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
  BatchReader reader(use_uring);
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

void read_direct(const LocalFile& file, uint64_t offset, std::span<std::byte> out,
                 uint64_t staging_bytes, bool use_uring, const std::string& name) {
  const uint64_t first = file.base + offset, last = first + out.size();
  const uint64_t window_start = first / kDirectAlign * kDirectAlign;
  const uint64_t window_end = (last + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
  // Slot size and count: as many 1 MiB slots as the budget allows (at most the depth), or one
  // smaller slot when the budget is under 1 MiB.
  staging_bytes = std::max(staging_bytes / kDirectAlign * kDirectAlign, kDirectAlign);
  const uint64_t slot_bytes = std::min(kPieceBytes, staging_bytes);
  const uint64_t windows = (window_end - window_start + slot_bytes - 1) / slot_bytes;
  const auto slots = static_cast<unsigned>(
      std::min<uint64_t>({staging_bytes / slot_bytes, BatchReader::kMaxDepth, windows}));
  std::byte* bounce = thread_bounce(slots * slot_bytes);

  BatchReader reader(use_uring);
  struct Slot {
    uint64_t window = 0;  // file offset the slot's read started at
    uint64_t filled = 0;  // bytes of the window already read
  };
  std::vector<Slot> slot(slots);
  uint64_t next_window = window_start;
  auto issue = [&](unsigned s) {
    const uint64_t length = std::min(slot_bytes, window_end - slot[s].window) - slot[s].filled;
    reader.submit(s, file.direct_fd, bounce + s * slot_bytes + slot[s].filled, length,
                  slot[s].window + slot[s].filled);
  };
  for (unsigned s = 0; s < slots; ++s) {
    slot[s] = {next_window, 0};
    next_window += slot_bytes;
    issue(s);
  }
  while (reader.in_flight() > 0) {
    auto done = reader.wait();
    const auto s = static_cast<unsigned>(done.tag);
    Slot& sl = slot[s];
    const uint64_t wanted = std::min(slot_bytes, window_end - sl.window);
    if (done.result < 0) fail(done.result, name, sl.window + sl.filled);
    sl.filled += static_cast<uint64_t>(done.result);
    // The window's useful part: its overlap with [first, last).
    const uint64_t lo = std::max(sl.window, first);
    const uint64_t hi = std::min(sl.window + wanted, last);
    const bool short_at_eof = done.result == 0 || sl.window + sl.filled >= file.file_size;
    if (sl.filled < wanted && !short_at_eof) {
      if (sl.filled % kDirectAlign != 0) fail(-EINVAL, name, sl.window + sl.filled);
      issue(s);
      continue;
    }
    if (sl.window + sl.filled < hi) fail(0, name, sl.window + sl.filled);
    std::memcpy(out.data() + (lo - first), bounce + s * slot_bytes + (lo - sl.window), hi - lo);
    if (next_window < window_end) {
      sl = {next_window, 0};
      next_window += slot_bytes;
      issue(s);
    }
  }
}

}  // namespace ballast
