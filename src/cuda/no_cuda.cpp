// The CUDA entry points of a build without the CUDA toolkit (see cuda_backend.hpp).
#include <fmt/format.h>

#include "ballast/error.hpp"
#include "cuda/cuda_backend.hpp"

namespace ballast {

bool cuda_compiled_in() { return false; }

int cuda_device_count() { return 0; }

std::shared_ptr<DeviceBackend> cuda_backend(int index) {
  throw Error(ErrorCode::unsupported,
              fmt::format("cannot load to {}: this ballast was built without CUDA (configure "
                          "with the CUDA toolkit installed, or -DBALLAST_CUDA=ON)",
                          to_string(Device::cuda(index))));
}

}  // namespace ballast
