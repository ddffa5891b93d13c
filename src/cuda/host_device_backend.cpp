// The host-memory DeviceBackend (see host_device_backend.hpp).
#include "cuda/host_device_backend.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "cuda/direct_storage.hpp"
#include "cuda/kernels/checkpoint_math.cuh"
#include "cuda/kernels/strided_layout.cuh"
#include "io/os.hpp"
#include "transform/cast.hpp"

namespace ballast {
namespace {

constexpr size_t kAlignment = 256;         // as cudaMalloc's
constexpr size_t kPinnedAlignment = 4096;  // a page, as cudaHostAlloc's

std::byte* allocate_aligned(uint64_t nbytes, size_t alignment = kAlignment) {
  return static_cast<std::byte*>(
      ::operator new (std::max<uint64_t>(nbytes, 1), std::align_val_t{alignment}));
}

void free_aligned(std::byte* memory, size_t alignment = kAlignment) noexcept {
  ::operator delete (memory, std::align_val_t{alignment});
}

// The emulated GPUDirect Storage: a file with an O_DIRECT descriptor (as cuFile needs) is read
// with pread straight into the "device" memory.
class HostDirectStorage final : public DirectStorage {
 public:
  explicit HostDirectStorage(Device device) : device_(device) {}

  std::optional<std::string> prepare(const LocalFile& file) override {
    if (file.direct_fd < 0) return "the file has no O_DIRECT descriptor";
    return std::nullopt;
  }
  void read(const LocalFile& file, uint64_t offset, std::span<std::byte> out,
            const std::string& name) override {
    const ssize_t got = pread_full(*file.os, file.fd, out.data(), out.size(),
                                   static_cast<off_t>(file.base + offset));
    if (got < 0 || static_cast<uint64_t>(got) != out.size())
      throw Error(ErrorCode::io,
                  fmt::format("direct read to {} failed: {}", to_string(device_),
                              got < 0 ? std::strerror(errno) : "the file ended early"),
                  {.source = name, .offset = offset});
  }

 private:
  Device device_;
};

// One stream: its queued tasks run in order on its own thread.
class HostStream {
 public:
  HostStream() : worker_([this] { run(); }) {}
  ~HostStream() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;

  void enqueue(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    wake_.notify_all();
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and every queued task has run
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread worker_;  // last: starts once the members above exist
};

// An event completes a recording once its stream has run the work queued before it.
struct HostEvent {
  std::mutex mutex;
  std::condition_variable done;
  uint64_t recorded = 0;
  uint64_t completed = 0;
};

class HostDeviceBackend final : public DeviceBackend, public DirectStorageOffer {
 public:
  explicit HostDeviceBackend(HostDeviceBackendOptions options)
      : options_(options), direct_(options.device) {}

  DirectStorage* direct_storage(GpuDirectStorage, std::string& reason) override {
    if (options_.direct_storage) return &direct_;
    reason = "the host device backend offers no direct path";
    return nullptr;
  }

  bool owns_pinned(const std::byte* memory, uint64_t n) const {
    std::lock_guard lock(pinned_mutex_);
    auto it = pinned_.upper_bound(memory);
    if (it == pinned_.begin()) return false;
    --it;
    return memory >= it->first && n <= it->second &&
           static_cast<uint64_t>(memory - it->first) <= it->second - n;
  }

  Device device() const override { return options_.device; }

  std::byte* allocate_device(uint64_t nbytes) override {
    std::byte* memory = allocate_aligned(nbytes);
    std::lock_guard lock(counters_mutex_);
    sizes_[memory] = nbytes;
    counters_.device_bytes += nbytes;
    counters_.peak_device_bytes = std::max(counters_.peak_device_bytes, counters_.device_bytes);
    return memory;
  }
  void free_device(std::byte* memory) noexcept override {
    {
      std::lock_guard lock(counters_mutex_);
      if (auto it = sizes_.find(memory); it != sizes_.end()) {
        counters_.device_bytes -= it->second;
        sizes_.erase(it);
      }
    }
    free_aligned(memory);
  }

  HostDeviceCounters counters() const {
    std::lock_guard lock(counters_mutex_);
    return counters_;
  }

  DeviceStream create_stream() override { return new HostStream; }
  void destroy_stream(DeviceStream stream) noexcept override {
    delete static_cast<HostStream*>(stream);
  }
  DeviceEvent create_event() override { return new HostEvent; }
  void destroy_event(DeviceEvent event) noexcept override { delete static_cast<HostEvent*>(event); }

  void copy_to_device_async(std::byte* dst, const std::byte* src, uint64_t n,
                            DeviceStream stream) override {
    count_to_device(n);
    static_cast<HostStream*>(stream)->enqueue([dst, src, n, delay = options_.copy_delay] {
      if (delay.count() > 0) std::this_thread::sleep_for(delay);
      std::memcpy(dst, src, n);
    });
  }
  // As cudaMemcpy, a copy of no bytes may name null pointers.
  void copy_to_device(std::byte* dst, const std::byte* src, uint64_t n) override {
    count_to_device(n);
    if (n > 0) std::memcpy(dst, src, n);
  }
  void copy_to_host(std::byte* dst, const std::byte* src, uint64_t n) override {
    if (n > 0) std::memcpy(dst, src, n);
  }

  void record_event(DeviceEvent event, DeviceStream stream) override {
    auto* e = static_cast<HostEvent*>(event);
    uint64_t generation = 0;
    {
      std::lock_guard lock(e->mutex);
      generation = ++e->recorded;
    }
    // Notified under the lock: a waiter may destroy the event (synchronize_stream's is on its
    // stack) as soon as it can take the lock after seeing its generation complete.
    static_cast<HostStream*>(stream)->enqueue([e, generation] {
      std::lock_guard lock(e->mutex);
      e->completed = std::max(e->completed, generation);
      e->done.notify_all();
    });
  }
  void synchronize_event(DeviceEvent event) override {
    auto* e = static_cast<HostEvent*>(event);
    std::unique_lock lock(e->mutex);
    const uint64_t target = e->recorded;
    e->done.wait(lock, [&] { return e->completed >= target; });
  }
  void synchronize_stream(DeviceStream stream) override {
    HostEvent event;
    record_event(&event, stream);
    synchronize_event(&event);
  }

  bool can_cast(DType from, DType to) const override { return ballast::can_cast(from, to); }
  void cast_async(DType from, const std::byte* src, DType to, std::byte* dst, uint64_t count,
                  DeviceStream stream) override {
    static_cast<HostStream*>(stream)->enqueue(
        [=] { cast_elements(from, src, to, dst, static_cast<size_t>(count)); });
  }

  bool can_strided_copy(uint32_t element_size, size_t rank) const override {
    return rank >= 1 && rank <= cuda::kMaxStridedRank &&
           (element_size == 1 || element_size == 2 || element_size == 4 || element_size == 8 ||
            element_size == 16);
  }
  void strided_copy_async(const std::byte* src, std::byte* dst, uint32_t element_size,
                          std::span<const int64_t> shape, std::span<const int64_t> src_strides,
                          std::span<const int64_t> dst_strides, DeviceStream stream) override {
    if (!can_strided_copy(element_size, shape.size()) || src_strides.size() != shape.size() ||
        dst_strides.size() != shape.size())
      throw Error(ErrorCode::invalid_argument, "no strided copy of this rank or element size");
    uint64_t n = 1;
    for (int64_t extent : shape) n *= static_cast<uint64_t>(extent);
    if (n == 0) return;
    const auto layout = cuda::simplify_pair_layout(shape, src_strides, dst_strides);
    static_cast<HostStream*>(stream)->enqueue([=] {
      switch (element_size) {
        case 1: scatter<uint8_t>(layout, src, dst, n); break;
        case 2: scatter<uint16_t>(layout, src, dst, n); break;
        case 4: scatter<uint32_t>(layout, src, dst, n); break;
        case 8: scatter<uint64_t>(layout, src, dst, n); break;
        default: scatter<Bytes16>(layout, src, dst, n); break;
      }
    });
  }

  bool can_dequantize(const DeviceQuantizedParts&, DType to) const override {
    return to == DType::f32 || to == DType::f16 || to == DType::bf16;
  }
  void dequantize_async(const DeviceQuantizedParts& parts, DType to, std::byte* dst,
                        DeviceStream stream) override {
    if (!can_dequantize(parts, to))
      throw Error(ErrorCode::unsupported,
                  "dequantization writes f32, f16 or bf16, not " + std::string(dtype_name(to)));
    static_cast<HostStream*>(stream)->enqueue([parts, to, dst] {
      std::visit([&](const auto& p) { dequantize_all(p, to, dst); }, parts);
    });
  }

 protected:
  std::byte* allocate_pinned_memory(uint64_t nbytes) override {
    std::byte* memory = allocate_aligned(nbytes, kPinnedAlignment);
    std::lock_guard lock(pinned_mutex_);
    pinned_[memory] = nbytes;
    return memory;
  }
  void free_pinned_memory(std::byte* memory) noexcept override {
    {
      std::lock_guard lock(pinned_mutex_);
      pinned_.erase(memory);
    }
    free_aligned(memory, kPinnedAlignment);
  }

 private:
  struct Bytes16 {
    uint64_t low;
    uint64_t high;
  };

  // The device kernel's loop, one element at a time.
  template <typename Element>
  static void scatter(const cuda::StridedPairLayout& layout, const std::byte* src, std::byte* dst,
                      uint64_t n) {
    const auto* from = reinterpret_cast<const Element*>(src);
    auto* to = reinterpret_cast<Element*>(dst);
    for (uint64_t i = 0; i < n; ++i) cuda::strided_scatter_element(layout, from, to, i);
  }

  // The device kernels' loops, one element of the dense weight at a time.
  template <typename Parts, float (*Element)(const Parts&, int64_t, int64_t)>
  static void dequantize_each(const Parts& parts, DType to, std::byte* dst) {
    const auto n = static_cast<uint64_t>(parts.out) * static_cast<uint64_t>(parts.in);
    for (uint64_t k = 0; k < n; ++k)
      cuda::dequantize_dense_element<Parts, Element>(parts, to, dst, k);
  }
  static void dequantize_all(const cuda::GptqParts& p, DType to, std::byte* dst) {
    dequantize_each<cuda::GptqParts, cuda::gptq_element>(p, to, dst);
  }
  static void dequantize_all(const cuda::AwqParts& p, DType to, std::byte* dst) {
    dequantize_each<cuda::AwqParts, cuda::awq_element>(p, to, dst);
  }
  static void dequantize_all(const cuda::Fp8Parts& p, DType to, std::byte* dst) {
    dequantize_each<cuda::Fp8Parts, cuda::fp8_element>(p, to, dst);
  }
  static void dequantize_all(const cuda::Int8Parts& p, DType to, std::byte* dst) {
    dequantize_each<cuda::Int8Parts, cuda::int8_element>(p, to, dst);
  }
  static void dequantize_all(const cuda::Int4Parts& p, DType to, std::byte* dst) {
    dequantize_each<cuda::Int4Parts, cuda::int4_element>(p, to, dst);
  }

  void count_to_device(uint64_t n) {
    std::lock_guard lock(counters_mutex_);
    counters_.bytes_to_device += n;
  }

  HostDeviceBackendOptions options_;
  mutable std::mutex counters_mutex_;
  std::unordered_map<const std::byte*, uint64_t> sizes_;  // live device allocations
  HostDeviceCounters counters_;
  HostDirectStorage direct_;
  mutable std::mutex pinned_mutex_;
  std::map<const std::byte*, uint64_t> pinned_;  // live pinned allocations and their sizes
};

}  // namespace

std::shared_ptr<DeviceBackend> make_host_device_backend(HostDeviceBackendOptions options) {
  return std::make_shared<HostDeviceBackend>(options);
}

HostDeviceCounters host_device_counters(const DeviceBackend& backend) {
  const auto* host = dynamic_cast<const HostDeviceBackend*>(&backend);
  if (!host)
    throw Error(
        ErrorCode::invalid_argument,
        "host_device_counters: " + to_string(backend.device()) + " is not the host device backend");
  return host->counters();
}

bool is_pinned_by(const DeviceBackend& backend, const std::byte* memory, uint64_t n) {
  const auto* host = dynamic_cast<const HostDeviceBackend*>(&backend);
  return host && host->owns_pinned(memory, n);
}

}  // namespace ballast
