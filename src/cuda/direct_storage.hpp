// DirectStorage: reads from a local file straight into device memory, with no host staging:
// GPUDirect Storage through cuFile for the CUDA backend (cufile_reader.hpp), a pread into its
// "device" memory for the host-memory backend (so the routing is tested on the CPU). A backend
// that has such a path also derives from DirectStorageOffer; the loader asks with a
// dynamic_cast, so DeviceBackend itself knows nothing of it. Whatever fails while setting the
// path up (no library, no driver, a file that will not register) is a reason to fall back to
// the pinned pipeline; a read that fails once the path is set up is an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "ballast/config.hpp"
#include "io/local_file.hpp"

namespace ballast {

class DirectStorage {
 public:
  virtual ~DirectStorage() = default;

  // Readies `file` (its direct_fd, the O_DIRECT descriptor) for direct reads, once per file
  // (a file handle registered with cuFile); nullopt when ready, else why it cannot be.
  virtual std::optional<std::string> prepare(const LocalFile& file) = 0;
  // Reads source bytes [offset, offset + out.size()) of a prepared `file` (offset relative to
  // file.base) into device memory `out`; returns once they are there. Throws Error(io) naming
  // `name`, the offset and the device when the read fails or the file ends early.
  virtual void read(const LocalFile& file, uint64_t offset, std::span<std::byte> out,
                    const std::string& name) = 0;
};

class DirectStorageOffer {
 public:
  virtual ~DirectStorageOffer() = default;
  // The backend's direct path for loads under `mode` (automatic or required), or null with
  // `reason` set (cuFile missing, its driver failing, only its compatibility mode under
  // automatic).
  virtual DirectStorage* direct_storage(GpuDirectStorage mode, std::string& reason) = 0;
};

}  // namespace ballast
