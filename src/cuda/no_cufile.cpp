// The cuFile entry of a build without cufile.h (see cufile_reader.hpp): no direct path.
#include "cuda/cufile_reader.hpp"

namespace ballast {

DirectStorage* cufile_direct_storage(int, GpuDirectStorage, std::string& reason) {
  reason =
      "this ballast was built without cufile.h (configure with BALLAST_CUFILE=ON and the "
      "nvidia-cufile headers, docs/gpu.md)";
  return nullptr;
}

}  // namespace ballast
