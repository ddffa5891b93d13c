// Device loads through the pipeline (see device_load.hpp).
#include "loader/device_load.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "ballast/error.hpp"
#include "io/read_engine.hpp"
#include "loader/device_reads.hpp"
#include "loader/view_reads.hpp"

namespace ballast {
namespace {

// The stored bytes are the tensor's, or its input of one device cast: one contiguous run in
// native byte order, not fused, not quantized.
bool reads_straight_to_device(const LoadPlan& plan, const DeviceUploader& uploader) {
  const View& view = plan.view;
  if (plan.quantize || !plan.pieces.empty() || !view.is_contiguous() ||
      (view.byte_order == ByteOrder::big && dtype_element_size(view.dtype) > 1))
    return false;
  if (plan.steps.empty()) return true;
  const ValueStep& step = plan.steps.front();
  return plan.steps.size() == 1 && step.kind == ValueStep::Kind::cast &&
         uploader.can_cast(step.from, step.to);
}

// The single cast step of a plan with one, if any.
std::optional<DeviceCast> single_cast(const LoadPlan& plan) {
  if (plan.steps.size() != 1 || plan.steps.front().kind != ValueStep::Kind::cast)
    return std::nullopt;
  return DeviceCast{plan.steps.front().from, plan.steps.front().to};
}

// A strided view (transpose, slice) of whole little-endian elements, not fused or quantized,
// with no value step or one cast the device runs: its stored spans cross the bus and are
// scattered (and cast) on the device.
bool scatters_on_device(const LoadPlan& plan, const DeviceUploader& uploader) {
  const View& view = plan.view;
  if (plan.quantize || !plan.pieces.empty() || view.is_contiguous() || view.numel() == 0 ||
      (view.byte_order == ByteOrder::big && dtype_element_size(view.dtype) > 1))
    return false;
  for (size_t d = 0; d < view.shape.size(); ++d)
    if (view.shape[d] > 1 && view.strides[d] <= 0) return false;
  const auto cast = single_cast(plan);
  if (!plan.steps.empty() && !cast) return false;
  return uploader.can_upload_strided(view.dtype, view.shape.size(), cast);
}

// A strided view's chunks: a view whose rows are runs (a column slice) reads only its runs, as
// a CPU load does (runs a small gap apart read as one range), packed into the slot; any other
// (a transpose) reads each chunk's stored span whole.
void upload_view(const View& view, DeviceUploader& uploader, std::byte* dst,
                 std::optional<DeviceCast> cast, const ReadEngineOptions& io) {
  const uint64_t element = dtype_element_size(view.dtype);
  if (!readable_by_runs(view)) {
    uploader.upload_strided(
        [&](const StridedChunk& chunk, std::span<std::byte> out) {
          read_into(*view.data, view.offset + chunk.src_offset * element, out, io);
        },
        DeviceUploader::ChunkLayout::span, view.dtype, view.shape, view.strides, dst, cast);
    return;
  }
  CoalesceLimits limits;
  limits.max_span_bytes = std::max<uint64_t>(io.staging_bytes_per_thread, 1);
  uploader.upload_strided(
      [&](const StridedChunk& chunk, std::span<std::byte> out) {
        View part = view;
        part.offset = view.offset + chunk.src_offset * element;
        part.shape = chunk.shape;
        read_view_runs(part, out.data(), limits, io);
      },
      DeviceUploader::ChunkLayout::packed, view.dtype, view.shape, view.strides, dst, cast);
}

}  // namespace

DeviceUploader& DeviceUploads::uploader_for(const std::shared_ptr<DeviceBackend>& backend) {
  std::lock_guard lock(mutex_);
  auto& uploader = uploaders_[backend.get()];
  if (!uploader) uploader = std::make_unique<DeviceUploader>(backend, options_);
  return *uploader;
}

TensorRef load_to_device(const PreparedLoad& p, DeviceTensorFactory& factory,
                         DeviceUploader& uploader, const MaterializeOptions& host,
                         GpuDirectStorage gds) {
  const LoadPlan& plan = p.plan;
  if (plan.quantize) throw Error(ErrorCode::unsupported, "quantized bundles load to the host only");
  auto storage = factory.allocate(plan.out_nbytes, host.alignment);
  const View& view = plan.view;
  if (reads_straight_to_device(plan, uploader)) {
    upload_stored({*view.data, view.offset, *dtype_bytes_for(view.dtype, view.numel())},
                  storage->data(), single_cast(plan), uploader, host.io, gds);
  } else if (scatters_on_device(plan, uploader)) {
    if (gds == GpuDirectStorage::required)
      fail_direct_storage_required(uploader.backend().device(),
                                   "a strided view is read through the staging ring");
    upload_view(view, uploader, storage->data(), single_cast(plan), host.io);
  } else {
    if (gds == GpuDirectStorage::required)
      fail_direct_storage_required(uploader.backend().device(),
                                   "the tensor is transformed on the host");
    auto tensor = materialize(plan, p.name, host);
    const std::byte* bytes = tensor->data();
    uploader.upload(
        [&](uint64_t at, std::span<std::byte> out) {
          std::memcpy(out.data(), bytes + at, out.size());
        },
        tensor->nbytes(), storage->data());
  }
  return std::make_shared<Tensor>(p.name, plan.out_dtype, plan.out_shape, std::move(storage), 0,
                                  plan.out_nbytes);
}

}  // namespace ballast
