// DeviceBackend: the few device operations the host-to-device pipeline needs (device and pinned
// host memory, asynchronous copies on streams, events, device-side casts, strided copies and
// dequantization), behind one interface with two implementations: the CUDA runtime
// (cuda_backend.hpp) and host memory standing in for a device (host_device_backend.hpp), which runs
// each stream's work on its own thread so the pipeline's asynchrony and ordering are real when it
// is tested on the CPU.
//
// Streams and events are opaque handles (a cudaStream_t / cudaEvent_t for CUDA). Every call
// that fails throws ballast::Error naming the device.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>

#include "ballast/device.hpp"
#include "ballast/dtype.hpp"
#include "cuda/device_kernels.hpp"

namespace ballast {

using DeviceStream = void*;

// A quantized weight's parts in device memory, as the dequantization kernels take them.
using DeviceQuantizedParts =
    std::variant<cuda::GptqParts, cuda::AwqParts, cuda::Fp8Parts, cuda::Int8Parts, cuda::Int4Parts>;
using DeviceEvent = void*;

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  virtual Device device() const = 0;

  // Device memory for tensors and device-side scratch.
  virtual std::byte* allocate_device(uint64_t nbytes) = 0;
  virtual void free_device(std::byte* memory) noexcept = 0;

  // Page-locked host memory the device copies from asynchronously; counted, so the pipeline's
  // staging can be checked against its budget.
  std::byte* allocate_pinned(uint64_t nbytes);
  void free_pinned(std::byte* memory, uint64_t nbytes) noexcept;
  uint64_t pinned_bytes() const { return pinned_.load(); }
  uint64_t peak_pinned_bytes() const { return peak_pinned_.load(); }

  virtual DeviceStream create_stream() = 0;
  virtual void destroy_stream(DeviceStream stream) noexcept = 0;
  virtual DeviceEvent create_event() = 0;
  virtual void destroy_event(DeviceEvent event) noexcept = 0;

  // Queues a copy of n bytes from pinned host memory to device memory on `stream`.
  virtual void copy_to_device_async(std::byte* dst, const std::byte* src, uint64_t n,
                                    DeviceStream stream) = 0;
  // Copies n bytes of any host memory to the device and returns when they are there.
  virtual void copy_to_device(std::byte* dst, const std::byte* src, uint64_t n) = 0;
  // Copies n bytes of device memory back to the host (tests, checks) and waits.
  virtual void copy_to_host(std::byte* dst, const std::byte* src, uint64_t n) = 0;

  // The event completes once the work queued on `stream` before it has.
  virtual void record_event(DeviceEvent event, DeviceStream stream) = 0;
  virtual void synchronize_event(DeviceEvent event) = 0;
  virtual void synchronize_stream(DeviceStream stream) = 0;

  // Device-side casts of `count` contiguous elements (src and dst in device memory), queued on
  // `stream`. can_cast false: the caller converts on the host before the upload.
  virtual bool can_cast(DType from, DType to) const = 0;
  virtual void cast_async(DType from, const std::byte* src, DType to, std::byte* dst,
                          uint64_t count, DeviceStream stream) = 0;

  // Device-side strided copies (transposes, slices): element (i0, i1, ...) of `shape` is read
  // from src + sum(i_k * src_strides[k]) and written to dst + sum(i_k * dst_strides[k]),
  // strides in elements of element_size bytes (src and dst in device memory, no two elements
  // written to the same place), queued on `stream`. can_strided_copy false for that element
  // size and rank: the caller gathers on the host before the upload.
  virtual bool can_strided_copy(uint32_t element_size, size_t rank) const = 0;
  virtual void strided_copy_async(const std::byte* src, std::byte* dst, uint32_t element_size,
                                  std::span<const int64_t> shape,
                                  std::span<const int64_t> src_strides,
                                  std::span<const int64_t> dst_strides, DeviceStream stream) = 0;

  // Device-side dequantization of a GPTQ / AWQ / FP8 checkpoint's or an int8 / int4 bundle's
  // parts (device memory, checked by check_quantized_parts) into the dense [out, in] weight at
  // dst as `to` (f32, f16 or bf16), queued on `stream`. can_dequantize false: the caller
  // dequantizes on the host.
  virtual bool can_dequantize(const DeviceQuantizedParts& parts, DType to) const = 0;
  virtual void dequantize_async(const DeviceQuantizedParts& parts, DType to, std::byte* dst,
                                DeviceStream stream) = 0;

 protected:
  virtual std::byte* allocate_pinned_memory(uint64_t nbytes) = 0;
  virtual void free_pinned_memory(std::byte* memory) noexcept = 0;

 private:
  std::atomic<uint64_t> pinned_{0};
  std::atomic<uint64_t> peak_pinned_{0};
};

}  // namespace ballast
