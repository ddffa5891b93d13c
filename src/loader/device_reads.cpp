// The read paths of device loads (see device_reads.hpp).
#include "loader/device_reads.hpp"

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "cuda/direct_storage.hpp"
#include "io/direct_read.hpp"
#include "io/local_file.hpp"

namespace ballast {
namespace {

// The backend's direct path, ready for the source's local file (opened into `file` with its
// O_DIRECT descriptor); null with `reason` set when there is none.
DirectStorage* direct_path(DeviceBackend& backend, const ByteSource& source, GpuDirectStorage mode,
                           std::optional<LocalFile>& file, std::string& reason) {
  auto* offer = dynamic_cast<DirectStorageOffer*>(&backend);
  if (!offer) {
    reason = "the device backend has no direct path";
    return nullptr;
  }
  DirectStorage* direct = offer->direct_storage(mode, reason);
  if (!direct) return nullptr;
  if (!file) file = local_file_of(source, true);
  if (!file) {
    reason = "the source is not a local file";
    return nullptr;
  }
  if (file->direct_fd < 0) {
    reason = "the file system refuses O_DIRECT";
    return nullptr;
  }
  if (auto why = direct->prepare(*file)) {
    reason = std::move(*why);
    return nullptr;
  }
  return direct;
}

}  // namespace

void fail_direct_storage_required(Device device, const std::string& reason) {
  throw Error(ErrorCode::unsupported,
              fmt::format("GPUDirect Storage to {} is required (gpu_direct_storage) but cannot "
                          "be used: {}",
                          to_string(device), reason));
}

void upload_stored(const StoredBytes& stored, std::byte* dst, std::optional<DeviceCast> cast,
                   DeviceUploader& uploader, const ReadEngineOptions& io, GpuDirectStorage gds) {
  const std::string& name = stored.source.name();
  const bool direct_io = io.method == IoMethod::direct;
  std::optional<LocalFile> file;
  if (direct_io) file = local_file_of(stored.source, true);
  if (gds != GpuDirectStorage::off) {
    std::string reason;
    if (DirectStorage* direct = direct_path(uploader.backend(), stored.source, gds, file, reason)) {
      uploader.upload_direct(
          [&](uint64_t at, std::span<std::byte> out) {
            direct->read(*file, stored.offset + at, out, name);
          },
          stored.nbytes, dst, cast);
      return;
    }
    if (gds == GpuDirectStorage::required)
      fail_direct_storage_required(uploader.backend().device(), reason);
  }
  if (direct_io && file && file->direct_fd >= 0 &&
      uploader.ring().slot_bytes() > kDirectAlignment) {
    uploader.upload_from_slots(
        [&](uint64_t at, uint64_t n, std::span<std::byte> slot) {
          return read_direct_covering(*file, stored.offset + at, n, slot, name);
        },
        kDirectAlignment, stored.nbytes, dst, cast);
    return;
  }
  uploader.upload(
      [&](uint64_t at, std::span<std::byte> out) {
        read_into(stored.source, stored.offset + at, out, io);
      },
      stored.nbytes, dst, cast);
}

}  // namespace ballast
