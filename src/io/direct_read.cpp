// One O_DIRECT covering read into aligned memory (see direct_read.hpp).
#include "io/direct_read.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/batch_reader.hpp"
#include "util/checked.hpp"

namespace ballast {
namespace {

constexpr uint64_t kPieceBytes = 1 << 20;  // one submitted read

uint64_t align_down(uint64_t v) { return v / kDirectAlignment * kDirectAlignment; }

}  // namespace

uint64_t direct_covering_bytes(uint64_t offset, uint64_t n) {
  const uint64_t head = offset % kDirectAlignment;
  return align_down(head + n + kDirectAlignment - 1);
}

uint64_t read_direct_covering(const LocalFile& file, uint64_t offset, uint64_t n,
                              std::span<std::byte> buffer, const std::string& name) {
  const auto first = checked_add(file.base, offset);
  if (!first || !checked_add(*first, n + kDirectAlignment))
    throw Error(ErrorCode::invalid_argument, "O_DIRECT range overflows a file offset",
                {.source = name, .offset = offset});
  const uint64_t start = align_down(*first), head = *first - start;
  const uint64_t length = direct_covering_bytes(*first, n);
  if (reinterpret_cast<uintptr_t>(buffer.data()) % kDirectAlignment != 0 || buffer.size() < length)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("an O_DIRECT read of {} bytes needs a {}-aligned buffer of {} bytes", n,
                            kDirectAlignment, length),
                {.source = name, .offset = offset});
  if (n == 0) return head;
  // The pieces in flight: their file offset, their length and what is read of them so far.
  struct Piece {
    uint64_t at, length, filled = 0;
  };
  std::vector<Piece> pieces;
  for (uint64_t at = 0; at < length; at += kPieceBytes)
    pieces.push_back({start + at, std::min(kPieceBytes, length - at)});
  const uint64_t wanted_end = *first + n;
  auto fail = [&](ssize_t result, uint64_t at) {
    if (result < 0)
      throw Error(ErrorCode::io,
                  fmt::format("read failed: {}", std::strerror(static_cast<int>(-result))),
                  {.source = name, .offset = at - file.base});
    throw Error(ErrorCode::io, "file shrank while reading",
                {.source = name, .offset = at - file.base});
  };
  BatchReader reader(*file.os, true);
  auto issue = [&](size_t p) {
    Piece& piece = pieces[p];
    reader.submit(p, file.direct_fd, buffer.data() + (piece.at - start) + piece.filled,
                  piece.length - piece.filled, piece.at + piece.filled);
  };
  size_t next = 0;
  std::optional<Error> error;
  while (next < pieces.size() && reader.in_flight() < BatchReader::kMaxDepth) issue(next++);
  while (reader.in_flight() > 0) {
    const auto done = reader.wait();
    Piece& piece = pieces[done.tag];
    try {
      if (done.result < 0) fail(done.result, piece.at + piece.filled);
      piece.filled += static_cast<uint64_t>(done.result);
      // A short read ends the file (the covering range may pass it); O_DIRECT reads the rest
      // of a longer file again only from an aligned offset.
      const uint64_t reached = piece.at + piece.filled;
      if (piece.filled < piece.length && done.result > 0 && reached < wanted_end) {
        if (piece.filled % kDirectAlignment != 0) fail(-EINVAL, reached);
        issue(done.tag);
        continue;
      }
      if (reached < std::min(piece.at + piece.length, wanted_end)) fail(0, reached);
    } catch (Error& e) {
      if (!error) error = std::move(e);  // the reads in flight still land in `buffer`: wait
    }
    if (!error && next < pieces.size()) issue(next++);
  }
  if (error) throw *error;
  return head;
}

}  // namespace ballast
