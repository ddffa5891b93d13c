// Downloading a remote object into a cache (whole, or the rest of an interrupted download),
// after probing it by ranges. The probe reads through a PrefixSource, so the header bytes it
// parsed are not fetched again: the download starts after them. Shared by the object cache
// (URL, S3) and the Hub cache.
#pragma once

#include <functional>

#include "remote/http_fetch.hpp"
#include "remote/object_probe.hpp"
#include "remote/remote_context.hpp"

namespace ballast {

// Streams the object from offset `from` to its end to `sink`, taking what `prefix` (its bytes
// from offset 0, read already) holds of that from there: concurrent ranged GETs when `info`
// says the server honours Range, else one GET. `arrived`, when set, hears how far the object
// has arrived (its offset) as bytes come in, from the reading threads: ranged GETs land a
// piece of chunk_bytes x concurrency before `sink` hears of it, so progress comes from here.
// With integrity checks on, an object without validator (has_validator) is streamed whole in
// one GET instead, and its first bytes must equal `prefix` (Error(integrity) otherwise).
void download_object(const RemoteContext& remote, const HttpTarget& target,
                     const HttpObjectInfo& info, std::span<const std::byte> prefix, uint64_t from,
                     const ByteSink& sink, const std::function<void(uint64_t)>& arrived = {});

// Runs `probe` (when given) over ranged reads of the object, then streams the object from
// offset `from` to its end to `sink`: concurrent ranged GETs when `info` says the server
// honours Range, else one GET (download_object, after the bytes the probe read from the
// start). Whatever the probe throws propagates before a byte reaches `sink`.
void probe_and_download(const RemoteContext& remote, const HttpTarget& target,
                        const HttpObjectInfo& info, const ObjectProbe& probe, uint64_t from,
                        const ByteSink& sink, const std::function<void(uint64_t)>& arrived = {});

}  // namespace ballast
