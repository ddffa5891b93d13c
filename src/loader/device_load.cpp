// Device loads through the pipeline (see device_load.hpp).
#include "loader/device_load.hpp"

#include <cstring>

#include "ballast/error.hpp"
#include "loader/device_reads.hpp"

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
  if (reads_straight_to_device(plan, uploader)) {
    const View& view = plan.view;
    std::optional<DeviceCast> cast;
    if (!plan.steps.empty()) cast = DeviceCast{plan.steps.front().from, plan.steps.front().to};
    upload_stored({*view.data, view.offset, *dtype_bytes_for(view.dtype, view.numel())},
                  storage->data(), cast, uploader, host.io, gds);
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
