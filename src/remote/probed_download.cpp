// Probe, then download (see probed_download.hpp).
#include "remote/probed_download.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "ballast/error.hpp"
#include "remote/http_byte_source.hpp"
#include "remote/prefix_source.hpp"

namespace ballast {
namespace {

// An object without validator, downloaded in one request (nothing would pin a second one to
// the same version), whose first bytes must be those read before it (`prefix`: the bytes a
// probe parsed), else the object changed between the requests: Error(integrity).
void download_unvalidated(const RemoteContext& remote, const HttpTarget& target,
                          const HttpObjectInfo& info, std::span<const std::byte> prefix,
                          uint64_t from, const ByteSink& sink) {
  uint64_t at = 0;  // the object's bytes seen so far
  http_stream(
      *remote.http, target, info, 0, info.size,
      [&](std::span<const std::byte> bytes) {
        if (at < prefix.size()) {
          const size_t n =
              static_cast<size_t>(std::min<uint64_t>(bytes.size(), prefix.size() - at));
          if (std::memcmp(bytes.data(), prefix.data() + at, n) != 0)
            throw Error(ErrorCode::integrity,
                        "the object changed while it was being read (its server states neither "
                        "an ETag nor a Last-Modified, and its first bytes differ from those read "
                        "before)",
                        {.source = target.name, .offset = at});
        }
        if (at + bytes.size() > from)
          sink(bytes.subspan(static_cast<size_t>(std::max<uint64_t>(at, from) - at)));
        at += bytes.size();
      },
      nullptr, /*resumable=*/false);
}

}  // namespace

void download_object(const RemoteContext& remote, const HttpTarget& target,
                     const HttpObjectInfo& info, std::span<const std::byte> prefix, uint64_t from,
                     const ByteSink& sink, const std::function<void(uint64_t)>& arrived) {
  if (remote.reads.one_request_without_validator && !has_validator(info))
    return download_unvalidated(remote, target, info, prefix, from, sink);
  if (from < prefix.size()) sink(prefix.subspan(from));
  const uint64_t start = std::max<uint64_t>(from, prefix.size());
  if (!info.ranges || start == info.size) {
    http_stream(*remote.http, target, info, start, info.size - start, sink, nullptr);
    return;
  }
  // Arrivals are reported in order and never past the piece in flight (a retried range may
  // deliver bytes twice), so that `arrived` and the sink's own count never go backwards.
  HttpReadOptions reads = remote.reads;
  std::mutex reporting;
  uint64_t landed = start, piece_end = start;
  if (arrived)
    reads.on_bytes = [&](uint64_t n) {
      std::lock_guard lock(reporting);
      landed = std::min(landed + n, piece_end);
      arrived(landed);
    };
  auto source = open_http_source(remote.http, target, info, reads);
  const uint64_t piece = std::max<uint64_t>(
      remote.reads.chunk_bytes * static_cast<uint64_t>(std::max(remote.reads.concurrency, 1)), 1);
  std::vector<std::byte> buffer(std::min(piece, info.size - start));
  for (uint64_t offset = start; offset < info.size; offset += buffer.size()) {
    const uint64_t n = std::min<uint64_t>(buffer.size(), info.size - offset);
    {
      std::lock_guard lock(reporting);
      landed = offset;
      piece_end = offset + n;
    }
    source->read_at(offset, std::span(buffer.data(), n));
    sink(std::span<const std::byte>(buffer.data(), n));
  }
}

void probe_and_download(const RemoteContext& remote, const HttpTarget& target,
                        const HttpObjectInfo& info, const ObjectProbe& probe, uint64_t from,
                        const ByteSink& sink, const std::function<void(uint64_t)>& arrived) {
  std::vector<std::byte> prefix;
  if (probe) {
    auto ranged =
        std::make_shared<PrefixSource>(open_http_source(remote.http, target, info, remote.reads));
    probe(ranged);
    prefix = ranged->take_prefix();
  }
  download_object(remote, target, info, prefix, from, sink, arrived);
}

}  // namespace ballast
