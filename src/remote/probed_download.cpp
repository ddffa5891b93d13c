// Probe, then download (see probed_download.hpp).
#include "remote/probed_download.hpp"

#include <algorithm>
#include <vector>

#include "remote/http_byte_source.hpp"
#include "remote/prefix_source.hpp"

namespace ballast {

void download_object(const RemoteContext& remote, const HttpTarget& target,
                     const HttpObjectInfo& info, std::span<const std::byte> prefix, uint64_t from,
                     const ByteSink& sink) {
  if (from < prefix.size()) sink(prefix.subspan(from));
  const uint64_t start = std::max<uint64_t>(from, prefix.size());
  if (!info.ranges || start == info.size) {
    http_stream(*remote.http, target, info, start, info.size - start, sink, nullptr);
    return;
  }
  auto source = open_http_source(remote.http, target, info, remote.reads);
  const uint64_t piece = std::max<uint64_t>(
      remote.reads.chunk_bytes * static_cast<uint64_t>(std::max(remote.reads.concurrency, 1)), 1);
  std::vector<std::byte> buffer(std::min(piece, info.size - start));
  for (uint64_t offset = start; offset < info.size; offset += buffer.size()) {
    const uint64_t n = std::min<uint64_t>(buffer.size(), info.size - offset);
    source->read_at(offset, std::span(buffer.data(), n));
    sink(std::span<const std::byte>(buffer.data(), n));
  }
}

void probe_and_download(const RemoteContext& remote, const HttpTarget& target,
                        const HttpObjectInfo& info, const ObjectProbe& probe, uint64_t from,
                        const ByteSink& sink) {
  std::vector<std::byte> prefix;
  if (probe) {
    auto ranged =
        std::make_shared<PrefixSource>(open_http_source(remote.http, target, info, remote.reads));
    probe(ranged);
    prefix = ranged->take_prefix();
  }
  download_object(remote, target, info, prefix, from, sink);
}

}  // namespace ballast
