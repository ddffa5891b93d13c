// Probe, then download (see probed_download.hpp).
#include "remote/probed_download.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

#include "remote/http_byte_source.hpp"
#include "remote/prefix_source.hpp"

namespace ballast {

void download_object(const RemoteContext& remote, const HttpTarget& target,
                     const HttpObjectInfo& info, std::span<const std::byte> prefix, uint64_t from,
                     const ByteSink& sink, const std::function<void(uint64_t)>& arrived) {
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
