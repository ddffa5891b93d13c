// GPUDirect Storage through cuFile (see cufile_reader.hpp). Only this file sees cufile.h.
#include "cuda/cufile_reader.hpp"

#include <cuda_runtime_api.h>
#include <cufile.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/os.hpp"

namespace ballast {
namespace {

// libcufile is opened with dlopen instead of being linked: the CUDA toolkit often ships none
// (PyPI's nvidia-cufile, PyTorch or a driver install bring it), and every ballast binary must
// start, and load through the pinned pipeline, on machines without it. Linked, it would be a
// hard dependency of the library and of every program using it.
struct CuFileApi {
  decltype(&cuFileDriverOpen) driver_open = nullptr;
  decltype(&cuFileHandleRegister) handle_register = nullptr;
  decltype(&cuFileHandleDeregister) handle_deregister = nullptr;
  decltype(&cuFileRead) read = nullptr;
};

std::string error_text(CUfileError_t status) {
  if (IS_CUDA_ERR(status))
    return fmt::format("CUDA driver error {}", static_cast<int>(CU_FILE_CUDA_ERR(status)));
  // cufileop_status_error, not CUFILE_ERRSTR: that macro takes abs() of the unsigned enum,
  // which clang rejects (-Wabsolute-value); the codes are never negative.
  return cufileop_status_error(status.err);
}

// Loads the library and opens its driver; null with `failure` set when either fails.
std::unique_ptr<CuFileApi> open_cufile(int index, std::string& failure) {
  void* library = dlopen("libcufile.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = dlerror();
    failure = fmt::format(
        "libcufile.so.0 cannot be loaded ({}); install nvidia-cufile or put "
        "its lib folder on LD_LIBRARY_PATH",
        why ? why : "not found");
    return nullptr;
  }
  auto api = std::make_unique<CuFileApi>();
  auto symbol = [&](auto& function, const char* name) {
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(dlsym(library, name));
    return function != nullptr;
  };
  if (!symbol(api->driver_open, "cuFileDriverOpen") ||
      !symbol(api->handle_register, "cuFileHandleRegister") ||
      !symbol(api->handle_deregister, "cuFileHandleDeregister") ||
      !symbol(api->read, "cuFileRead")) {
    failure = "libcufile.so.0 lacks the cuFile entry points";
    return nullptr;
  }
  // The driver opens against the current device's context.
  if (const cudaError_t status = cudaSetDevice(index); status != cudaSuccess) {
    failure = fmt::format("cudaSetDevice({}) failed: {}", index, cudaGetErrorString(status));
    return nullptr;
  }
  if (const CUfileError_t status = api->driver_open(); status.err != CU_FILE_SUCCESS) {
    failure = fmt::format("cuFileDriverOpen failed: {}", error_text(status));
    return nullptr;
  }
  return api;
}

// The library and its driver, opened once per process and never closed (cuFile's driver stays
// up until the process ends). Null with `reason` when either fails.
const CuFileApi* cufile_api(int index, std::string& reason) {
  static std::mutex mutex;
  static std::unique_ptr<CuFileApi> api;
  static std::string failure;
  static bool tried = false;
  std::lock_guard lock(mutex);
  if (!tried) {
    tried = true;
    api = open_cufile(index, failure);
  }
  if (!api) reason = failure;
  return api.get();
}

// Whether the nvidia-fs kernel module is loaded: without it cuFile runs in its compatibility
// mode, reading through the page cache into its own buffers and copying: no faster than the
// pinned pipeline.
bool nvidia_fs_loaded() {
  std::error_code ec;
  return std::filesystem::exists("/proc/driver/nvidia-fs", ec);
}

class CuFileReader final : public DirectStorage {
 public:
  CuFileReader(const CuFileApi& api, int index) : api_(api), index_(index) {}

  // A file's registration is kept by descriptor, with the file's identity: a descriptor number
  // that a closed file freed and another file reused is registered again.
  std::optional<std::string> prepare(const LocalFile& file) override {
    struct stat st {};
    if (file.os->fstat(file.direct_fd, &st) != 0)
      return fmt::format("fstat failed: {}", std::strerror(errno));
    std::lock_guard lock(mutex_);
    auto it = files_.find(file.direct_fd);
    if (it != files_.end() && it->second.device == st.st_dev && it->second.inode == st.st_ino)
      return it->second.failure;
    if (it != files_.end()) {
      if (it->second.handle) api_.handle_deregister(it->second.handle);
      files_.erase(it);
    }
    Registered entry{.device = st.st_dev, .inode = st.st_ino};
    CUfileDescr_t descr{};
    descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    descr.handle.fd = file.direct_fd;
    if (const CUfileError_t status = api_.handle_register(&entry.handle, &descr);
        status.err != CU_FILE_SUCCESS) {
      entry.handle = nullptr;
      entry.failure = fmt::format("cuFileHandleRegister failed: {}", error_text(status));
    }
    auto failure = entry.failure;
    files_.emplace(file.direct_fd, std::move(entry));
    return failure;
  }

  void read(const LocalFile& file, uint64_t offset, std::span<std::byte> out,
            const std::string& name) override {
    CUfileHandle_t handle = nullptr;
    {
      std::lock_guard lock(mutex_);
      auto it = files_.find(file.direct_fd);
      if (it != files_.end()) handle = it->second.handle;
    }
    if (!handle)
      throw Error(ErrorCode::io, "the file is not registered with cuFile",
                  {.source = name, .offset = offset});
    if (const cudaError_t status = cudaSetDevice(index_); status != cudaSuccess)
      throw Error(ErrorCode::io, fmt::format("cudaSetDevice on {} failed: {}", device_name(),
                                             cudaGetErrorString(status)));
    uint64_t done = 0;
    while (done < out.size()) {
      const ssize_t got =
          api_.read(handle, out.data(), out.size() - done,
                    static_cast<off_t>(file.base + offset + done), static_cast<off_t>(done));
      if (got > 0) {
        done += static_cast<uint64_t>(got);
        continue;
      }
      const std::string why = got == 0    ? "the file ended early"
                              : got == -1 ? std::string(std::strerror(errno))
                                          : std::string(CUFILE_ERRSTR(static_cast<int>(got)));
      throw Error(ErrorCode::io, fmt::format("cuFileRead to {} failed: {}", device_name(), why),
                  {.source = name, .offset = offset + done});
    }
  }

 private:
  struct Registered {
    dev_t device = 0;
    ino_t inode = 0;
    CUfileHandle_t handle = nullptr;
    std::optional<std::string> failure;  // why it did not register
  };

  std::string device_name() const { return to_string(Device::cuda(index_)); }

  const CuFileApi& api_;
  int index_;
  std::mutex mutex_;
  std::map<int, Registered> files_;  // by O_DIRECT descriptor
};

}  // namespace

DirectStorage* cufile_direct_storage(int index, GpuDirectStorage mode, std::string& reason) {
  const CuFileApi* api = cufile_api(index, reason);
  if (!api) return nullptr;
  if (mode == GpuDirectStorage::automatic && !nvidia_fs_loaded()) {
    reason =
        "the nvidia-fs kernel module is not loaded, so cuFile would run in its compatibility "
        "mode, no faster than the pinned pipeline (gpu_direct_storage=required uses it anyway)";
    return nullptr;
  }
  // One reader per device for the process's life, never destroyed: its registrations end with
  // the process, after which no deregistration could reach a driver already gone.
  static std::mutex mutex;
  static auto* readers = new std::map<int, CuFileReader*>;
  std::lock_guard lock(mutex);
  auto& reader = (*readers)[index];
  if (!reader) reader = new CuFileReader(*api, index);
  return reader;
}

}  // namespace ballast
