// Dequantization on the device (see device_dequantize.hpp).
#include "loader/device_dequantize.hpp"

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "ballast/storage.hpp"
#include "cuda/device_tensor_factory.hpp"
#include "transform/cast.hpp"
#include "util/checked.hpp"

namespace ballast {
namespace {

using Scheme = QuantizeConfig::Scheme;

TensorRef host_copy(DeviceBackend& backend, const Tensor& part) {
  auto storage = make_host_buffer(part.nbytes(), 64);
  backend.copy_to_host(storage->data(), part.data(), part.nbytes());
  return std::make_shared<Tensor>(part.name(), part.dtype(), part.shape(), storage, 0,
                                  part.nbytes());
}

const void* data_of(const NamedParts& parts, const std::string& name) {
  const auto it = parts.find(name);
  return it == parts.end() ? nullptr : it->second->data();
}

template <typename T>
const T* words_of(const NamedParts& parts, const std::string& name) {
  return static_cast<const T*>(data_of(parts, name));
}

DType dtype_of(const NamedParts& parts, const std::string& name, DType absent) {
  const auto it = parts.find(name);
  return it == parts.end() ? absent : it->second->dtype();
}

// The kernel arguments of checked parts.
DeviceQuantizedParts kernel_parts(Scheme scheme, const NamedParts& p, const QuantizedGeometry& g) {
  const int64_t out = g.dims.out, in = g.dims.in;
  switch (scheme) {
    case Scheme::gptq:
      return cuda::GptqParts{.qweight = words_of<uint32_t>(p, "qweight"),
                             .qzeros = words_of<uint32_t>(p, "qzeros"),
                             .scales = data_of(p, "scales"),
                             .scales_dtype = dtype_of(p, "scales", DType::f16),
                             .g_idx = data_of(p, "g_idx"),
                             .g_idx_dtype = dtype_of(p, "g_idx", DType::i32),
                             .out = out,
                             .in = in,
                             .groups = g.groups,
                             .bits = g.bits};
    case Scheme::awq:
      return cuda::AwqParts{.qweight = words_of<uint32_t>(p, "qweight"),
                            .qzeros = words_of<uint32_t>(p, "qzeros"),
                            .scales = data_of(p, "scales"),
                            .scales_dtype = dtype_of(p, "scales", DType::f16),
                            .out = out,
                            .in = in,
                            .groups = g.groups};
    case Scheme::fp8:
      return cuda::Fp8Parts{.qweight = words_of<uint8_t>(p, "qweight"),
                            .qweight_dtype = dtype_of(p, "qweight", DType::f8_e4m3),
                            .scale = data_of(p, "scale"),
                            .scale_dtype = dtype_of(p, "scale", DType::f32),
                            .out = out,
                            .in = in,
                            .scale_rows = g.scale_rows,
                            .scale_cols = g.scale_cols,
                            .row_block = g.row_block,
                            .col_block = g.col_block};
    case Scheme::int8:
      return cuda::Int8Parts{.qweight = data_of(p, "qweight"),
                             .qweight_dtype = dtype_of(p, "qweight", DType::i8),
                             .scales = data_of(p, "scales"),
                             .scales_dtype = dtype_of(p, "scales", DType::f32),
                             .qzeros = words_of<uint8_t>(p, "qzeros"),
                             .out = out,
                             .in = in};
    case Scheme::int4:
      return cuda::Int4Parts{.qweight = words_of<uint8_t>(p, "qweight"),
                             .scales = data_of(p, "scales"),
                             .scales_dtype = dtype_of(p, "scales", DType::f32),
                             .zeros = words_of<uint8_t>(p, "zeros"),
                             .out = out,
                             .in = in,
                             .groups = g.groups};
  }
  throw Error(ErrorCode::invalid_argument, "unknown quantization scheme");
}

// A stream for one dequantization, destroyed with it.
class StreamGuard {
 public:
  explicit StreamGuard(DeviceBackend& backend)
      : backend_(backend), stream_(backend.create_stream()) {}
  ~StreamGuard() {
    try {
      backend_.synchronize_stream(stream_);  // nothing queued writes the tensor any longer
    } catch (...) {  // the device failed: the first error is the one reported
    }
    backend_.destroy_stream(stream_);
  }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;
  DeviceStream get() const { return stream_; }

 private:
  DeviceBackend& backend_;
  DeviceStream stream_;
};

}  // namespace

TensorRef dequantize_on_device(Scheme scheme, const NamedParts& parts, DType dtype,
                               const std::string& name) {
  std::shared_ptr<DeviceBackend> backend;
  for (const auto& [part, tensor] : parts) {
    auto of = tensor ? device_backend_of(*tensor->storage()) : nullptr;
    if (!of || (backend && of != backend))
      throw Error(
          ErrorCode::invalid_argument,
          fmt::format("quantized part '{}' is not in the device memory of the other parts", part));
    backend = of;
  }
  if (!backend) throw Error(ErrorCode::not_found, "no quantized parts");
  // The checks read g_idx's entries: a host copy stands in for the device part.
  NamedParts checked = parts;
  if (auto it = checked.find("g_idx"); it != checked.end())
    it->second = host_copy(*backend, *it->second);
  const QuantizedGeometry geometry = check_quantized_parts(scheme, checked);
  const auto count = checked_mul(static_cast<uint64_t>(geometry.dims.out),
                                 static_cast<uint64_t>(geometry.dims.in));
  const auto nbytes = count ? dtype_bytes_for(dtype, *count) : std::nullopt;
  if (!nbytes)
    throw Error(ErrorCode::limit_exceeded,
                fmt::format("a dense weight of {} x {} elements is too large", geometry.dims.out,
                            geometry.dims.in));
  auto storage = make_device_tensor_factory(backend)->allocate(*nbytes, 64);
  const DeviceQuantizedParts kernel = kernel_parts(scheme, parts, geometry);
  if (backend->can_dequantize(kernel, dtype)) {
    StreamGuard stream(*backend);
    backend->dequantize_async(kernel, dtype, storage->data(), stream.get());
    backend->synchronize_stream(stream.get());
  } else {
    NamedParts host;
    for (const auto& [part, tensor] : parts) host[part] = host_copy(*backend, *tensor);
    const DenseWeight dense = dequantize_parts(scheme, host);
    std::vector<std::byte> bytes(*nbytes);
    cast_elements(DType::f32, reinterpret_cast<const std::byte*>(dense.values.data()), dtype,
                  bytes.data(), dense.values.size());
    backend->copy_to_device(storage->data(), bytes.data(), bytes.size());
  }
  return std::make_shared<Tensor>(name, dtype, Shape{geometry.dims.out, geometry.dims.in},
                                  std::move(storage), 0, *nbytes);
}

}  // namespace ballast
