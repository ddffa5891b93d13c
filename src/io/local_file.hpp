// The side interface of ballast's own sources that sit on a local file (an opened file, a
// slice of one, a cached remote blob): the descriptors the read engine makes its own system
// calls with (pread pieces, io_uring, O_DIRECT sweeps, private mappings). It is internal: the
// public ByteSource knows nothing of descriptors, and a user's source is read through read_at
// and mapping() only. The read engine asks with local_file_of(), a dynamic_cast.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "ballast/byte_source.hpp"

namespace ballast {

class Os;

// The open local file behind a source: byte `offset` of the source is byte `base + offset` of
// the file. The descriptors belong to `os`, which makes every call on them.
struct LocalFile {
  int fd = -1;         // opened for buffered reads
  int direct_fd = -1;  // the same file opened with O_DIRECT, or -1 where that failed
  uint64_t base = 0;
  uint64_t file_size = 0;
  std::shared_ptr<const Os> os;  // never null
};

class LocalFileBacked {
 public:
  virtual ~LocalFileBacked() = default;
  // The local file behind the source, or nullopt (a remote blob not cached yet). `want_direct`
  // opens the O_DIRECT descriptor on first use. The descriptors live as long as the source.
  virtual std::optional<LocalFile> local_file(bool want_direct) const = 0;
};

// The local file behind `source` when it is one of ballast's file-backed sources, else nullopt.
inline std::optional<LocalFile> local_file_of(const ByteSource& source, bool want_direct) {
  const auto* backed = dynamic_cast<const LocalFileBacked*>(&source);
  return backed ? backed->local_file(want_direct) : std::nullopt;
}

}  // namespace ballast
