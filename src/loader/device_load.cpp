// Device loads through the pipeline (see device_load.hpp).
#include "loader/device_load.hpp"

#include <cstring>
#include <optional>

#include "ballast/error.hpp"
#include "io/read_engine.hpp"

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

}  // namespace

DeviceUploader& DeviceUploads::uploader_for(const std::shared_ptr<DeviceBackend>& backend) {
  std::lock_guard lock(mutex_);
  auto& uploader = uploaders_[backend.get()];
  if (!uploader) uploader = std::make_unique<DeviceUploader>(backend, options_);
  return *uploader;
}

TensorRef load_to_device(const PreparedLoad& p, DeviceTensorFactory& factory,
                         DeviceUploader& uploader, const MaterializeOptions& host) {
  const LoadPlan& plan = p.plan;
  if (plan.quantize) throw Error(ErrorCode::unsupported, "quantized bundles load to the host only");
  auto storage = factory.allocate(plan.out_nbytes, host.alignment);
  const View& view = plan.view;
  const HostFill read = [&](uint64_t at, std::span<std::byte> out) {
    read_into(*view.data, view.offset + at, out, host.io);
  };
  if (reads_straight_to_device(plan, uploader)) {
    uploader.upload(read, *dtype_bytes_for(view.dtype, view.numel()), storage->data(),
                    single_cast(plan));
  } else if (scatters_on_device(plan, uploader)) {
    uploader.upload_strided(read, view.dtype, view.shape, view.strides, storage->data(),
                            single_cast(plan));
  } else {
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
