// Loading a tensor into device memory: the pipeline's entry in the loader. A tensor stored
// contiguously is read chunk by chunk straight into the pinned staging ring and uploaded, with
// a single cast step run on the device when the backend can (the stored bytes cross the bus);
// a strided view (transpose, slice, with or without that cast) is read as the stored spans it
// covers and scattered into place on the device. Any other plan (fused shards, several value
// steps, byte swaps, Quantize) is materialized on the host as for a CPU load and its bytes
// uploaded through the same ring.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "cuda/device_tensor_factory.hpp"
#include "cuda/device_upload.hpp"
#include "loader/materialize.hpp"
#include "loader/prepared_load.hpp"

namespace ballast {

// One uploader (ring and streams) per device backend, made on first use; thread-safe.
class DeviceUploads {
 public:
  explicit DeviceUploads(DeviceUploaderOptions options) : options_(options) {}
  DeviceUploader& uploader_for(const std::shared_ptr<DeviceBackend>& backend);

 private:
  DeviceUploaderOptions options_;
  std::mutex mutex_;
  std::map<const DeviceBackend*, std::unique_ptr<DeviceUploader>> uploaders_;
};

// Returns the tensor once its bytes are complete in device memory. `host` materializes what
// cannot be read straight into staging; its io options read the rest. `gds` chooses whether
// stored bytes go straight from the file to the device (device_reads.hpp).
TensorRef load_to_device(const PreparedLoad& p, DeviceTensorFactory& factory,
                         DeviceUploader& uploader, const MaterializeOptions& host,
                         GpuDirectStorage gds);

}  // namespace ballast
