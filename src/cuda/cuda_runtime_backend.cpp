// The CUDA runtime DeviceBackend (see cuda_backend.hpp): cudaMalloc'd tensors, cudaHostAlloc'd
// staging, cudaMemcpyAsync on non-blocking streams, events without timing; GPUDirect Storage
// through cuFile as its direct path (cufile_reader.hpp).
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <type_traits>
#include <variant>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cufile_reader.hpp"

namespace ballast {
namespace {

[[noreturn]] void fail(cudaError_t status, int index, const char* what) {
  const ErrorCode code =
      status == cudaErrorMemoryAllocation ? ErrorCode::limit_exceeded : ErrorCode::io;
  throw Error(code, fmt::format("{} on {} failed: {} ({})", what, to_string(Device::cuda(index)),
                                cudaGetErrorString(status), cudaGetErrorName(status)));
}

class CudaBackend final : public DeviceBackend, public DirectStorageOffer {
 public:
  explicit CudaBackend(int index) : index_(index) {}

  Device device() const override { return Device::cuda(index_); }

  DirectStorage* direct_storage(GpuDirectStorage mode, std::string& reason) override {
    return cufile_direct_storage(index_, mode, reason);
  }

  std::byte* allocate_device(uint64_t nbytes) override {
    use_device();
    void* memory = nullptr;
    check(cudaMalloc(&memory, std::max<uint64_t>(nbytes, 1)), "cudaMalloc");
    return static_cast<std::byte*>(memory);
  }
  void free_device(std::byte* memory) noexcept override {
    use_device();
    cudaFree(memory);
  }

  DeviceStream create_stream() override {
    use_device();
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    return stream;
  }
  void destroy_stream(DeviceStream stream) noexcept override {
    cudaStreamDestroy(static_cast<cudaStream_t>(stream));
  }
  DeviceEvent create_event() override {
    use_device();
    cudaEvent_t event = nullptr;
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
    return event;
  }
  void destroy_event(DeviceEvent event) noexcept override {
    cudaEventDestroy(static_cast<cudaEvent_t>(event));
  }

  void copy_to_device_async(std::byte* dst, const std::byte* src, uint64_t n,
                            DeviceStream stream) override {
    use_device();
    check(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)),
          "cudaMemcpyAsync");
  }
  void copy_to_device(std::byte* dst, const std::byte* src, uint64_t n) override {
    use_device();
    check(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  void copy_to_host(std::byte* dst, const std::byte* src, uint64_t n) override {
    use_device();
    check(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost), "cudaMemcpy");
  }

  void record_event(DeviceEvent event, DeviceStream stream) override {
    use_device();
    check(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)),
          "cudaEventRecord");
  }
  void synchronize_event(DeviceEvent event) override {
    check(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "cudaEventSynchronize");
  }
  void synchronize_stream(DeviceStream stream) override {
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
  }

  // Casts and ggml dequantization run in the kernels library (src/cuda/kernels) when the
  // build has it; without it every conversion runs on the host before the upload.
  bool can_cast(DType from, DType to) const override {
#if BALLAST_HAVE_CUDA_KERNELS
    if (cuda::device_can_dequantize_ggml(from)) return cuda::device_can_cast(DType::f32, to);
    return cuda::device_can_cast(from, to);
#else
    (void)from, (void)to;
    return false;
#endif
  }
  void cast_async(DType from, const std::byte* src, DType to, std::byte* dst, uint64_t count,
                  DeviceStream stream) override {
    use_device();
#if BALLAST_HAVE_CUDA_KERNELS
    if (cuda::device_can_dequantize_ggml(from))
      cuda::launch_ggml_dequantize(from, to, src, dst, count, stream);
    else
      cuda::launch_cast(from, to, src, dst, count, stream);
#else
    (void)src, (void)dst, (void)count, (void)stream;
    throw Error(ErrorCode::unsupported,
                fmt::format("this build has no device kernels to cast {} to {} on {}",
                            dtype_name(from), dtype_name(to), to_string(device())));
#endif
  }

  // Transposes and slices: the kernels library's strided scatter.
  bool can_strided_copy(uint32_t element_size, size_t rank) const override {
#if BALLAST_HAVE_CUDA_KERNELS
    return rank >= 1 && rank <= static_cast<size_t>(cuda::kMaxStridedRank) &&
           (element_size == 1 || element_size == 2 || element_size == 4 || element_size == 8 ||
            element_size == 16);
#else
    (void)element_size, (void)rank;
    return false;
#endif
  }
  void strided_copy_async(const std::byte* src, std::byte* dst, uint32_t element_size,
                          std::span<const int64_t> shape, std::span<const int64_t> src_strides,
                          std::span<const int64_t> dst_strides, DeviceStream stream) override {
    use_device();
#if BALLAST_HAVE_CUDA_KERNELS
    cuda::launch_strided_scatter(src, dst, element_size, shape, src_strides, dst_strides, stream);
#else
    (void)src, (void)dst, (void)element_size, (void)shape, (void)src_strides, (void)dst_strides,
        (void)stream;
    throw Error(ErrorCode::unsupported,
                fmt::format("this build has no device kernels for strided copies on {}",
                            to_string(device())));
#endif
  }

  // GPTQ / AWQ / FP8 / int8 / int4: the kernels library's dequantization launchers.
  bool can_dequantize(const DeviceQuantizedParts& parts, DType to) const override {
#if BALLAST_HAVE_CUDA_KERNELS
    const DType scales = std::visit(
        [](const auto& p) {
          if constexpr (std::is_same_v<std::decay_t<decltype(p)>, cuda::Fp8Parts>)
            return p.scale_dtype;
          else
            return p.scales_dtype;
        },
        parts);
    return (to == DType::f32 || to == DType::f16 || to == DType::bf16) &&
           cuda::device_can_cast(scales, DType::f32);
#else
    (void)parts, (void)to;
    return false;
#endif
  }
  void dequantize_async(const DeviceQuantizedParts& parts, DType to, std::byte* dst,
                        DeviceStream stream) override {
    use_device();
#if BALLAST_HAVE_CUDA_KERNELS
    std::visit([&](const auto& p) { launch(p, to, dst, stream); }, parts);
#else
    (void)parts, (void)dst, (void)stream;
    throw Error(ErrorCode::unsupported,
                fmt::format("this build has no device kernels to dequantize to {} on {}",
                            dtype_name(to), to_string(device())));
#endif
  }

 protected:
  std::byte* allocate_pinned_memory(uint64_t nbytes) override {
    use_device();
    void* memory = nullptr;
    check(cudaHostAlloc(&memory, std::max<uint64_t>(nbytes, 1), cudaHostAllocDefault),
          "cudaHostAlloc");
    return static_cast<std::byte*>(memory);
  }
  void free_pinned_memory(std::byte* memory) noexcept override { cudaFreeHost(memory); }

 private:
#if BALLAST_HAVE_CUDA_KERNELS
  static void launch(const cuda::GptqParts& p, DType to, void* dst, void* stream) {
    cuda::launch_gptq_dequantize(p, to, dst, stream);
  }
  static void launch(const cuda::AwqParts& p, DType to, void* dst, void* stream) {
    cuda::launch_awq_dequantize(p, to, dst, stream);
  }
  static void launch(const cuda::Fp8Parts& p, DType to, void* dst, void* stream) {
    cuda::launch_fp8_dequantize(p, to, dst, stream);
  }
  static void launch(const cuda::Int8Parts& p, DType to, void* dst, void* stream) {
    cuda::launch_int8_dequantize(p, to, dst, stream);
  }
  static void launch(const cuda::Int4Parts& p, DType to, void* dst, void* stream) {
    cuda::launch_int4_dequantize(p, to, dst, stream);
  }
#endif

  // The runtime's current device is per thread; the loader's workers may touch several.
  void use_device() const { check(cudaSetDevice(index_), "cudaSetDevice"); }
  void check(cudaError_t status, const char* what) const {
    if (status != cudaSuccess) fail(status, index_, what);
  }

  int index_;
};

}  // namespace

bool cuda_compiled_in() { return true; }

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

std::shared_ptr<DeviceBackend> cuda_backend(int index) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  const std::string name = to_string(Device::cuda(index));
  if (status != cudaSuccess)
    throw Error(ErrorCode::unsupported, fmt::format("cannot load to {}: no usable CUDA device ({})",
                                                    name, cudaGetErrorString(status)));
  if (index < 0 || index >= count)
    throw Error(
        ErrorCode::unsupported,
        fmt::format("cannot load to {}: the CUDA driver reports {} device(s)", name, count));
  static std::mutex mutex;
  static std::map<int, std::shared_ptr<DeviceBackend>> opened;
  std::lock_guard lock(mutex);
  auto& backend = opened[index];
  if (!backend) backend = std::make_shared<CudaBackend>(index);
  return backend;
}

}  // namespace ballast
