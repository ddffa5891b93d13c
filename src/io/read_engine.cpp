// The read engine (see read_engine.hpp).
#include "io/read_engine.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "core/produced_mapping.hpp"
#include "io/buffered_reads.hpp"
#include "io/direct_sweep.hpp"
#include "io/local_file.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"
#include "util/parallel_for.hpp"

namespace ballast {

IoMethod io_method_for(ReadMode mode) {
  switch (mode) {
    case ReadMode::io_uring: return IoMethod::io_uring;
    case ReadMode::direct: return IoMethod::direct;
    default: return IoMethod::pread;
  }
}

void read_into(const ByteSource& source, uint64_t offset, std::span<std::byte> out,
               const ReadEngineOptions& options) {
  if (!range_inside(offset, out.size(), source.size()))
    throw Error(ErrorCode::invalid_format, past_end_message(out.size(), source.size()),
                {.source = source.name(), .offset = offset});
  if (out.empty()) return;
  const auto file = local_file_of(source, options.method == IoMethod::direct);
  if (!file && (mapping_produces_bytes(source) || !source.mapping())) {
    source.read_at(offset, out);
    return;
  }
  if (file && options.method == IoMethod::direct && file->direct_fd >= 0) {
    const DirectRange range{offset, out};
    sweep_direct(*file, {&range, 1},
                 {.staging_bytes_per_thread = options.staging_bytes_per_thread,
                  .pool = options.pool,
                  .helpers = options.helpers},
                 source.name());
    return;
  }
  const bool uring = file && options.method != IoMethod::pread;
  const uint64_t chunk = std::max<uint64_t>(options.chunk_bytes, 1);
  const uint64_t chunks = (out.size() + chunk - 1) / chunk;
  parallel_for(options.pool, options.helpers, chunks, [&](size_t i) {
    const uint64_t at = i * chunk;
    auto part = out.subspan(at, std::min<uint64_t>(chunk, out.size() - at));
    if (uring)
      read_buffered(*file, offset + at, part, true, source.name());
    else
      source.read_at(offset + at, part);
  });
}

}  // namespace ballast
