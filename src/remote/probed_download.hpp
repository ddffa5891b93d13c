// Downloading a remote object whole into a cache, after probing it by ranges. The probe reads
// through a PrefixSource, so the header bytes it parsed are not fetched again: the download
// starts after them. Shared by the object cache (URL, S3) and the Hub cache.
#pragma once

#include "remote/http_fetch.hpp"
#include "remote/object_probe.hpp"
#include "remote/remote_context.hpp"

namespace ballast {

// Runs `probe` (when given) over ranged reads of the object, then streams the whole object to
// `sink`: concurrent ranged GETs when `info` says the server honours Range, else one GET.
// Whatever the probe throws propagates before a byte reaches `sink`.
void probe_and_download(const RemoteContext& remote, const HttpTarget& target,
                        const HttpObjectInfo& info, const ObjectProbe& probe, const ByteSink& sink);

}  // namespace ballast
