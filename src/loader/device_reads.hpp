// How the stored bytes of a device load that reads straight to the device (one contiguous run
// in native byte order, perhaps cast on the device) get there, in order of preference:
//  1. GPUDirect Storage: straight from the file into device memory (direct_storage.hpp), when
//     the loader's gpu_direct_storage mode allows it, the backend offers it and the local
//     file has an O_DIRECT descriptor that the path accepts;
//  2. O_DIRECT (ReadMode::direct) into the pinned staging slots, each slot receiving the
//     aligned file range that covers its chunk (no bounce buffer beside the ring);
//  3. the read engine into the slots (page cache, io_uring; a source that is no local file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "ballast/byte_source.hpp"
#include "ballast/config.hpp"
#include "cuda/device_upload.hpp"
#include "io/read_engine.hpp"

namespace ballast {

struct StoredBytes {
  const ByteSource& source;
  uint64_t offset = 0;  // in the source
  uint64_t nbytes = 0;
};

// Writes `stored` to device memory at dst (cast on the device when `cast` is set). Under
// GpuDirectStorage::required, throws Error(unsupported) naming the device and the reason when
// the direct path cannot be used.
void upload_stored(const StoredBytes& stored, std::byte* dst, std::optional<DeviceCast> cast,
                   DeviceUploader& uploader, const ReadEngineOptions& io, GpuDirectStorage gds);

// The error of a required direct path that a load cannot use, naming the device and `reason`.
[[noreturn]] void fail_direct_storage_required(Device device, const std::string& reason);

}  // namespace ballast
